// The generated client of the reference blog against a running blog (tests/production/test_typescript_client.py):
// node out/blog-smoke.js <base URL> <admin token> <suffix> <id of an inactive user>; prints one JSON report on its last line.
import { Client, JsonApiError, UsersResource } from "./client";

declare const process: { argv: string[]; exitCode?: number };

async function main(): Promise<void> {
  const [baseUrl, token, suffix, inactive] = process.argv.slice(2);
  const api = new Client({ baseUrl, token });
  const anonymous = new Client({ baseUrl });

  const tag = await api.tags.create({ attributes: { name: `ts-${suffix}` } });
  const created = await api.articles.create({
    attributes: { title: `Typed ${suffix}`, body: "From TypeScript.", status: "published" },
    relationships: { tags: [{ type: "tags", id: tag.data.id }] },
  });
  const id = created.data.id;

  const page = await api.articles.list({
    include: ["author", "tags"], fields: { articles: ["title", "author", "tags"], tags: ["name"] },
    filter: { status: "published", "tags.name": { startswith: `ts-${suffix}` } }, sort: ["-createdAt"], page: { size: 5 },
  });
  const listed = page.data.map((article) => ({ id: article.id, title: article.attributes.title,
    author: article.relationships.author.data?.type ?? null }));
  const includedTypes = (page.included ?? []).map((resource) => resource.type).sort();

  const one = await api.articles.get(id);
  const notModified = await api.articles.get(id, undefined, { ifNoneMatch: one.etag ?? "" });
  const withComments = await api.articles.get(id, { include: ["comments.author"] });

  // statistics and counts, typed per attribute; every article page after page, by cursors
  const counted = await api.articles.list({ filter: { status: "published" }, stats: { total: ["count"], title: ["minimum"] },
    meta: { articles: ["totalCount"] }, page: { size: 1 } });
  const everything = await api.articles.list({ meta: { articles: ["totalCount"] } });
  const pages = api.articles.pages({ sort: ["title"], page: { size: 1 } });
  let paged = 0;
  for (let next = await pages.next(); next !== null; next = await pages.next()) paged += next.data.length;
  // atomic operations: a tag added under a local id
  const atomicResults = await api.atomic([{ op: "add", data: { type: "tags", lid: "t", attributes: { name: `ts3-${suffix}` } } }]);
  const atomicTag = (atomicResults.results[0].data as { attributes: { name: string } }).attributes.name;
  // sideposting: an article with a new tag, named by its lid, in one request
  const posted = await api.articles.create(
    { attributes: { title: `Sideposted ${suffix}`, body: "Two at once.", status: "published" },
      relationships: { tags: [{ type: "tags", lid: "new-tag" }] } },
    { included: [{ type: "tags", lid: "new-tag", attributes: { name: `ts4-${suffix}` } }] });
  const sideposted = (posted.included ?? []).filter((resource) => resource.lid === "new-tag").map((resource) => resource.type);
  await api.articles.delete(posted.data.id);

  const updated = await api.articles.update(id, { attributes: { title: `Retitled ${suffix}` } }, { ifMatch: one.etag });
  let stale: number | null = null;
  try {
    await api.articles.update(id, { attributes: { title: "Lost" } }, { ifMatch: one.etag });
  } catch (error) {
    if (error instanceof JsonApiError) stale = error.status;
  }

  const second = await api.tags.create({ attributes: { name: `ts2-${suffix}` } });
  await api.articles.relationships.tags.add(id, [{ type: "tags", id: second.data.id }]);
  const afterAdd = (await api.articles.relationships.tags.get(id)).data.map((linked) => linked.id).sort();
  await api.articles.relationships.tags.remove(id, [{ type: "tags", id: tag.data.id }]);
  const afterRemove = (await api.articles.relationships.tags.get(id)).data.map((linked) => linked.id);

  let unauthorized: { status: number; errors: number } | null = null;
  try {
    await anonymous.tags.create({ attributes: { name: "nobody" } });
  } catch (error) {
    if (error instanceof JsonApiError) unauthorized = { status: error.status, errors: error.errors.length };
  }
  const current = await api.articles.get(id);  // the tags changed: so did its tag
  await api.articles.delete(id, { ifMatch: current.etag });
  let missing: number | null = null;
  try {
    await api.articles.get(id);
  } catch (error) {
    if (error instanceof JsonApiError) missing = error.status;
  }

  // a custom operation (POST /api/users/<id>/activate), with the user's tag as If-Match
  const user = await api.users.get(inactive);
  const activated = await api.users.operations.item.activate(inactive, undefined, { ifMatch: user.etag });
  const active = (activated.document as { data: UsersResource }).data.attributes.active;

  console.log(JSON.stringify({
    tag: tag.data.id, second: second.data.id, article: id, createdTitle: created.data.attributes.title, listed, includedTypes,
    etag: one.etag, notModified: notModified === null, withComments: Array.isArray(withComments.included),
    updatedTitle: updated.data.attributes.title, updatedEtag: updated.etag !== one.etag, stale, afterAdd, afterRemove,
    unauthorized, missing, activated: { status: activated.status, active, wasActive: user.data.attributes.active },
    counted: { meta: counted.meta, all: (everything.meta ?? {}).totalCount, paged }, atomicTag, sideposted,
  }));
}

main().catch((error: unknown) => {
  console.log(String(error instanceof Error ? error.stack : error));
  process.exitCode = 1;
});
