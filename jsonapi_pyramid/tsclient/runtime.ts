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
    // instanceof JsonApiError holds in an ES5 build too (there, Error's constructor drops the subclass)
    const setPrototypeOf = (Object as { setPrototypeOf?: (object: object, prototype: object) => void }).setPrototypeOf;
    if (setPrototypeOf !== undefined) setPrototypeOf(this, JsonApiError.prototype);
  }
}

export interface Identifier<T extends string> { type: T; id: string; meta?: Meta }
/** A resource made by the same request (sideposting): named by its `lid`. */
export interface LocalIdentifier<T extends string> { type: T; lid: string }
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
/** New resources created with a create or an update, each named by its `lid` (sideposting). */
export interface SidepostOptions<N> { included?: N[] }

const MEDIA_TYPE = "application/vnd.api+json";
const CURSOR_PROFILE = "http://jsonapi.org/profiles/ethanresnick/cursor-pagination/";
const ATOMIC_EXT = "https://jsonapi.org/ext/atomic";
const SIDEPOST_EXT = "https://jsonapi-pyramid.readthedocs.io/en/latest/sideposting.html";

type Query = { [key: string]: unknown };

// Typed by TypeScript's default library too (tsc --strict --noEmit client.ts, no options): no
// Object.entries, Object.assign or async functions below, only what ES5's library declares.
function entries(object: unknown): [string, unknown][] {
  const found: [string, unknown][] = [];
  if (object !== null && typeof object === "object") {
    for (const key of Object.keys(object)) found.push([key, (object as Query)[key]]);
  }
  return found;
}

function queryString(query: unknown): string {
  const parts: string[] = [];
  const add = (key: string, value: unknown): void => {
    parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(Array.isArray(value) ? value.join(",") : String(value))}`);
  };
  for (const [name, value] of entries(query)) {
    if (value === undefined) continue;
    if (name === "include" || name === "sort" || name === "group") {
      add(name, value);
    } else if (name === "fields" || name === "page" || name === "stats" || name === "meta") {
      for (const [key, inner] of entries(value)) if (inner !== undefined) add(`${name}[${key}]`, inner);
    } else if (name === "filter") {
      for (const [path, filter] of entries(value)) {
        if (filter === undefined) continue;
        if (filter !== null && typeof filter === "object" && !Array.isArray(filter)) {
          for (const [operator, operand] of entries(filter)) {
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

/** An answer as it came: its status, its document (null for 204 and 304), the resource's tag. */
export interface Answer { status: number; document: any; etag: string | null }

/** The HTTP calls every endpoint makes: JSON:API media type, bearer token, errors thrown. */
export class Http {
  private readonly base: string;
  private readonly token: string | undefined;
  private readonly fetcher: typeof fetch;

  constructor(options: ClientOptions, root: string) {
    this.base = options.baseUrl.replace(/\/+$/, "") + (options.root ?? root);
    this.token = options.token;
    this.fetcher = options.fetch ?? ((input, init) => fetch(input, init));
  }

  send(method: string, path: string, query?: unknown, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    return this.sendTo(method, this.base + path + queryString(query), body, headers);
  }

  /** A request to a URL the server gave (a `links.next`). */
  sendTo(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const sent: Record<string, string> = { Accept: MEDIA_TYPE };
    if (body !== undefined) sent["Content-Type"] = MEDIA_TYPE;
    for (const [name, value] of entries(headers)) sent[name] = String(value);
    if (this.token !== undefined) sent["Authorization"] = `Bearer ${this.token}`;
    const init: RequestInit = { method, headers: sent };
    if (body !== undefined) init.body = JSON.stringify(body);
    return this.fetcher(url, init).then((response) => {
      const etag = response.headers.get("X-Resource-ETag") ?? response.headers.get("ETag");
      return response.text().then((text): Answer => {  // "" for 204 and 304
        const document = text ? JSON.parse(text) : null;
        if (response.status === 304) return { status: 304, document: null, etag };
        if (!response.ok) {
          const errors: ErrorObject[] = Array.isArray(document?.errors) ? document.errors
            : [{ status: String(response.status), title: response.statusText }];
          throw new JsonApiError(response.status, errors);
        }
        return { status: response.status, document, etag };
      });
    });
  }
}

function ifMatch(options?: WriteOptions): Record<string, string> {
  return options?.ifMatch == null ? {} : { "If-Match": options.ifMatch };
}

function withTag<D>(answer: Answer): D {
  return { ...answer.document, etag: answer.etag } as D;
}

function nothing(): void {}

/** ``{type, id?, attributes?, relationships?}`` as a request's ``data``: linkage wrapped in ``{data}``. */
function resourceData(type: string, id: string | undefined, resource: unknown): Query {
  const data: Query = { type };
  for (const [key, value] of entries(resource)) {
    if (key !== "relationships") data[key] = value;
  }
  if (id !== undefined) data.id = id;
  const relationships = (resource as Query).relationships;
  if (relationships !== undefined) {
    const wrapped: Query = {};
    for (const [name, linkage] of entries(relationships)) if (linkage !== undefined) wrapped[name] = { data: linkage };
    data.relationships = wrapped;
  }
  return data;
}

/** The endpoints of one type: `/<type>`, `/<type>/<id>`, and its relationships' (`relationships`). */
/** ``{data}``, and ``included`` with the sideposting extension's media types when there are new resources. */
function writeBody(data: Query, included: unknown[] | undefined, headers: Record<string, string>): [Query, Record<string, string>] {
  if (included === undefined || included.length === 0) return [{ data }, headers];
  const media = `${MEDIA_TYPE}; ext="${SIDEPOST_EXT}"`;
  const sent: Record<string, string> = { Accept: media, "Content-Type": media };
  for (const [name, value] of entries(headers)) sent[name] = String(value);
  return [{ data, included: included.map((resource) => resourceData((resource as Query).type as string, undefined, resource)) }, sent];
}

export class ResourceApi<T extends string, R, I, Q, G, C, U, L, O, N> {
  constructor(protected readonly http: Http, readonly type: T, readonly relationships: L, readonly operations: O) {}

  list(query?: Q): Promise<Page<R, I>> {
    return this.http.send("GET", `/${this.type}`, query).then((answer) => withTag<Page<R, I>>(answer));
  }

  /** One resource; with `ifNoneMatch`, null when it has not changed (304). */
  get(id: string, query?: G): Promise<One<R, I>>;
  get(id: string, query: G | undefined, options: { ifNoneMatch: string }): Promise<One<R, I> | null>;
  get(id: string, query?: G, options?: { ifNoneMatch?: string }): Promise<One<R, I> | null> {
    const headers: Record<string, string> = options?.ifNoneMatch === undefined ? {} : { "If-None-Match": options.ifNoneMatch };
    return this.http.send("GET", `/${this.type}/${encodeURIComponent(id)}`, query, undefined, headers)
      .then((answer) => answer.status === 304 ? null : withTag<One<R, I>>(answer));
  }

  /** The collection page after page, with the cursor pagination profile: each `next()` gives the
   * following page (the first one first: `query.page.size` sets their size), null past the last. */
  pages(query?: Q): Pages<R, I> {
    const http = this.http;
    const headers = { Accept: `${MEDIA_TYPE}; profile="${CURSOR_PROFILE}"` };
    let following: string | null = null;
    let last: Promise<Page<R, I> | null> | null = null;
    const read = (answer: Answer | null): Page<R, I> | null => {
      if (answer === null) return null;
      const page = withTag<Page<R, I>>(answer);
      const link = page.links ? page.links.next : null;
      following = typeof link === "string" && page.data.length > 0 ? link : null;
      return page;
    };
    const path = `/${this.type}`;
    return {
      next(): Promise<Page<R, I> | null> {
        last = (last === null ? http.send("GET", path, query, undefined, headers)
          : last.then((page): Promise<Answer> | null => page === null || following === null ? null
            : http.sendTo("GET", following, undefined, headers))).then(read);
        return last;
      },
    };
  }

  create(resource: C, options?: SidepostOptions<N>): Promise<One<R, I>> {
    const [body, headers] = writeBody(resourceData(this.type, undefined, resource), options?.included, {});
    return this.http.send("POST", `/${this.type}`, undefined, body, headers).then((answer) => withTag<One<R, I>>(answer));
  }

  update(id: string, resource: U, options?: WriteOptions & SidepostOptions<N>): Promise<One<R, I>> {
    const [body, headers] = writeBody(resourceData(this.type, id, resource), options?.included, ifMatch(options));
    return this.http.send("PATCH", `/${this.type}/${encodeURIComponent(id)}`, undefined, body, headers)
      .then((answer) => withTag<One<R, I>>(answer));
  }

  delete(id: string, options?: WriteOptions): Promise<void> {
    return this.http.send("DELETE", `/${this.type}/${encodeURIComponent(id)}`, undefined, undefined, ifMatch(options)).then(nothing);
  }
}

/** Cursor pages of a collection (`ResourceApi.pages`). */
export interface Pages<R, I> { next(): Promise<Page<R, I> | null> }

/** One operation of an atomic request (the atomic extension): `ref` or `href` names its target. */
export interface AtomicOperation<T extends string> {
  op: "add" | "update" | "remove";
  ref?: { type: T; id?: string; lid?: string; relationship?: string };
  href?: string;
  data?: { type: T; id?: string; lid?: string; attributes?: Record<string, unknown>; relationships?: Record<string, unknown> }
    | Identifier<T> | Identifier<T>[] | null;
  meta?: Meta;
}

/** The results of an atomic request, in the order of its operations (`data` of each added or
 * updated resource). */
export interface AtomicResults { results: { data?: unknown; meta?: Meta }[] }

export function atomic<T extends string>(http: Http, operations: AtomicOperation<T>[]): Promise<AtomicResults> {
  const media = `${MEDIA_TYPE}; ext="${ATOMIC_EXT}"`;
  return http.send("POST", "/operations", undefined, { "atomic:operations": operations }, { Accept: media, "Content-Type": media })
    .then((answer) => ({ results: answer.document === null ? [] : answer.document["atomic:results"] }));
}

/** A custom operation on an item (`/<type>/<id>/<name>`) or on the collection (`/<type>/<name>`):
 * `body`, when given, is sent as the request's JSON:API document; the answer comes as it is. */
export type ItemOperation = (id: string, body?: unknown, options?: WriteOptions) => Promise<Answer>;
export type CollectionOperation = (body?: unknown) => Promise<Answer>;

export function itemOperation(http: Http, type: string, name: string, method: string): ItemOperation {
  return (id, body, options) => http.send(method, `/${type}/${encodeURIComponent(id)}/${name}`, undefined, body, ifMatch(options));
}

export function collectionOperation(http: Http, type: string, name: string, method: string): CollectionOperation {
  return (body) => http.send(method, `/${type}/${name}`, undefined, body);
}

/** `/<type>/<id>/relationships/<name>` of a to-one relationship. */
export class ToOneApi<T extends string> {
  constructor(protected readonly http: Http, readonly type: string, readonly name: string) {}

  protected path(id: string): string {
    return `/${this.type}/${encodeURIComponent(id)}/relationships/${this.name}`;
  }

  get(id: string): Promise<Linkage<Identifier<T> | null>> {
    return this.http.send("GET", this.path(id)).then((answer) => withTag<Linkage<Identifier<T> | null>>(answer));
  }
}

export class WritableToOneApi<T extends string> extends ToOneApi<T> {
  set(id: string, target: Identifier<T> | null, options?: WriteOptions): Promise<void> {
    return this.http.send("PATCH", this.path(id), undefined, { data: target }, ifMatch(options)).then(nothing);
  }
}

/** `/<type>/<id>/relationships/<name>` of a to-many relationship. */
export class ToManyApi<T extends string> {
  constructor(protected readonly http: Http, readonly type: string, readonly name: string) {}

  protected path(id: string): string {
    return `/${this.type}/${encodeURIComponent(id)}/relationships/${this.name}`;
  }

  get(id: string, query?: { page?: PageQuery }): Promise<Linkage<Identifier<T>[]>> {
    return this.http.send("GET", this.path(id), query).then((answer) => withTag<Linkage<Identifier<T>[]>>(answer));
  }
}

export class WritableToManyApi<T extends string> extends ToManyApi<T> {
  set(id: string, targets: Identifier<T>[], options?: WriteOptions): Promise<void> {
    return this.http.send("PATCH", this.path(id), undefined, { data: targets }, ifMatch(options)).then(nothing);
  }

  add(id: string, targets: Identifier<T>[], options?: WriteOptions): Promise<void> {
    return this.http.send("POST", this.path(id), undefined, { data: targets }, ifMatch(options)).then(nothing);
  }

  remove(id: string, targets: Identifier<T>[], options?: WriteOptions): Promise<void> {
    return this.http.send("DELETE", this.path(id), undefined, { data: targets }, ifMatch(options)).then(nothing);
  }
}
