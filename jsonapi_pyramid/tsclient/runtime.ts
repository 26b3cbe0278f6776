// ---- runtime: the same for every application ------------------------------------------------

export type Meta = Record<string, unknown>;
export type Link = string | { href: string; meta?: Meta } | null;
export type Links = Record<string, Link>;

export interface ErrorObject {
  id?: string;
  status: string;
  code?: string;
  title: string;
  detail?: string;
  source?: { pointer?: string; parameter?: string; header?: string };
  links?: Links;
  meta?: Meta;
}

/** A non-2xx answer: its HTTP status and the JSON:API `errors` array. */
export class JsonApiError extends Error {
  readonly status: number;
  readonly errors: ErrorObject[];

  constructor(status: number, errors: ErrorObject[]) {
    super(errors.map((error) => error.detail ?? error.title).join("; ") || `HTTP ${status}`);
    this.name = "JsonApiError";
    this.status = status;
    this.errors = errors;
  }
}

export interface Identifier<T extends string> { type: T; id: string; meta?: Meta }
export interface ToOne<T extends string> { data?: Identifier<T> | null; links?: Links; meta?: Meta }
export interface ToMany<T extends string> { data?: Identifier<T>[]; links?: Links; meta?: Meta }

/** A filter on one value: the value (`eq`), several (any of them), or operators. */
export type FilterOn<V, O extends string> = V | V[] | {
  [K in O]?: K extends "in" | "nin" ? V[] : K extends "isnull" ? boolean : K extends "contains" | "icontains" | "startswith" ? string : V;
};

export interface PageQuery { size?: number; number?: number; after?: string; before?: string }

/** A document of one resource. `etag`: its `ETag` (a write answer's `X-Resource-ETag`, the tag
 * `ifMatch` compares; a `get` without query parameters gives the same one). */
export interface One<R, I> { data: R; included?: I[]; meta?: Meta; links?: Links; etag: string | null }
export interface Page<R, I> { data: R[]; included?: I[]; meta?: Meta; links?: Links; etag: string | null }
export interface Linkage<D> { data: D; meta?: Meta; links?: Links; etag: string | null }

export interface ClientOptions {
  /** The server, e.g. `http://localhost:6543` (the API's root path is added). */
  baseUrl: string;
  /** A bearer token, sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** The API's root path (default: the one the client was generated for). */
  root?: string;
  /** The `fetch` to use (default: the platform's). */
  fetch?: typeof fetch;
}

export interface WriteOptions { ifMatch?: string | null }

const MEDIA_TYPE = "application/vnd.api+json";

type Query = { [key: string]: unknown };

function queryString(query: Query | undefined): string {
  const parts: string[] = [];
  const add = (key: string, value: unknown): void => {
    parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(Array.isArray(value) ? value.join(",") : String(value))}`);
  };
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined) continue;
    if (name === "include" || name === "sort") {
      add(name, value);
    } else if (name === "fields" || name === "page") {
      for (const [key, inner] of Object.entries(value as Query)) if (inner !== undefined) add(`${name}[${key}]`, inner);
    } else if (name === "filter") {
      for (const [path, filter] of Object.entries(value as Query)) {
        if (filter === undefined) continue;
        if (filter !== null && typeof filter === "object" && !Array.isArray(filter)) {
          for (const [operator, operand] of Object.entries(filter as Query)) {
            if (operand !== undefined) add(`filter[${path}][${operator}]`, operand);
          }
        } else {
          add(`filter[${path}]`, filter);
        }
      }
    }
  }
  return parts.length ? `?${parts.join("&")}` : "";
}

interface Answer { status: number; document: any; etag: string | null }

class Http {
  private readonly base: string;
  private readonly token: string | undefined;
  private readonly fetcher: typeof fetch;

  constructor(options: ClientOptions, root: string) {
    this.base = options.baseUrl.replace(/\/+$/, "") + (options.root ?? root);
    this.token = options.token;
    this.fetcher = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  async send(method: string, path: string, query?: Query, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const sent: Record<string, string> = { Accept: MEDIA_TYPE, ...headers };
    if (body !== undefined) sent["Content-Type"] = MEDIA_TYPE;
    if (this.token !== undefined) sent["Authorization"] = `Bearer ${this.token}`;
    const response = await this.fetcher(this.base + path + queryString(query), {
      method, headers: sent, body: body === undefined ? undefined : JSON.stringify(body),
    });
    const etag = response.headers.get("X-Resource-ETag") ?? response.headers.get("ETag");
    const text = response.status === 204 || response.status === 304 ? "" : await response.text();
    const document = text ? JSON.parse(text) : null;
    if (response.status === 304) return { status: 304, document: null, etag };
    if (!response.ok) {
      const errors: ErrorObject[] = Array.isArray(document?.errors) ? document.errors : [{ status: String(response.status), title: response.statusText }];
      throw new JsonApiError(response.status, errors);
    }
    return { status: response.status, document, etag };
  }
}

function ifMatch(options?: WriteOptions): Record<string, string> {
  return options?.ifMatch == null ? {} : { "If-Match": options.ifMatch };
}

function withTag<D>(answer: Answer): D {
  return { ...answer.document, etag: answer.etag } as D;
}

function linkage(relationships: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (relationships === undefined) return undefined;
  const wrapped: Record<string, unknown> = {};
  for (const [name, data] of Object.entries(relationships)) if (data !== undefined) wrapped[name] = { data };
  return wrapped;
}

/** The endpoints of one type: `/<type>`, `/<type>/<id>`. */
export class ResourceApi<T extends string, R, I, Q, G, C, U> {
  constructor(protected readonly http: Http, readonly type: T) {}

  async list(query?: Q): Promise<Page<R, I>> {
    return withTag(await this.http.send("GET", `/${this.type}`, query as Query));
  }

  /** One resource; with `ifNoneMatch`, null when it has not changed (304). */
  get(id: string, query?: G): Promise<One<R, I>>;
  get(id: string, query: G | undefined, options: { ifNoneMatch: string }): Promise<One<R, I> | null>;
  async get(id: string, query?: G, options?: { ifNoneMatch?: string }): Promise<One<R, I> | null> {
    const headers: Record<string, string> = options?.ifNoneMatch === undefined ? {} : { "If-None-Match": options.ifNoneMatch };
    const answer = await this.http.send("GET", `/${this.type}/${encodeURIComponent(id)}`, query as Query, undefined, headers);
    return answer.status === 304 ? null : withTag(answer);
  }

  async create(resource: C): Promise<One<R, I>> {
    const { relationships, ...rest } = resource as { relationships?: Record<string, unknown> };
    const data = { type: this.type, ...rest, relationships: linkage(relationships) };
    return withTag(await this.http.send("POST", `/${this.type}`, undefined, { data }));
  }

  async update(id: string, resource: U, options?: WriteOptions): Promise<One<R, I>> {
    const { relationships, ...rest } = resource as { relationships?: Record<string, unknown> };
    const data = { type: this.type, id, ...rest, relationships: linkage(relationships) };
    return withTag(await this.http.send("PATCH", `/${this.type}/${encodeURIComponent(id)}`, undefined, { data }, ifMatch(options)));
  }

  async delete(id: string, options?: WriteOptions): Promise<void> {
    await this.http.send("DELETE", `/${this.type}/${encodeURIComponent(id)}`, undefined, undefined, ifMatch(options));
  }
}

/** `/<type>/<id>/relationships/<name>` of a to-one relationship. */
export class ToOneApi<T extends string> {
  constructor(protected readonly http: Http, readonly type: string, readonly name: string) {}

  protected path(id: string): string {
    return `/${this.type}/${encodeURIComponent(id)}/relationships/${this.name}`;
  }

  async get(id: string): Promise<Linkage<Identifier<T> | null>> {
    return withTag(await this.http.send("GET", this.path(id)));
  }
}

export class WritableToOneApi<T extends string> extends ToOneApi<T> {
  async set(id: string, target: Identifier<T> | null, options?: WriteOptions): Promise<void> {
    await this.http.send("PATCH", this.path(id), undefined, { data: target }, ifMatch(options));
  }
}

/** `/<type>/<id>/relationships/<name>` of a to-many relationship. */
export class ToManyApi<T extends string> {
  constructor(protected readonly http: Http, readonly type: string, readonly name: string) {}

  protected path(id: string): string {
    return `/${this.type}/${encodeURIComponent(id)}/relationships/${this.name}`;
  }

  async get(id: string, query?: { page?: PageQuery }): Promise<Linkage<Identifier<T>[]>> {
    return withTag(await this.http.send("GET", this.path(id), query as Query));
  }
}

export class WritableToManyApi<T extends string> extends ToManyApi<T> {
  async set(id: string, targets: Identifier<T>[], options?: WriteOptions): Promise<void> {
    await this.http.send("PATCH", this.path(id), undefined, { data: targets }, ifMatch(options));
  }

  async add(id: string, targets: Identifier<T>[], options?: WriteOptions): Promise<void> {
    await this.http.send("POST", this.path(id), undefined, { data: targets }, ifMatch(options));
  }

  async remove(id: string, targets: Identifier<T>[], options?: WriteOptions): Promise<void> {
    await this.http.send("DELETE", this.path(id), undefined, { data: targets }, ifMatch(options));
  }
}
