// The generated client in a browser page on another origin than the API (docs/clients.rst; run by
// tests/browser/test_typescript_browser.py): compiled with client.ts to ES modules, loaded by
// index.html. It reads anonymously what the blog shows everyone and writes what it learns into the page.
import { Client, JsonApiError, UsersResource } from "./client.js";

function show(line: string): void {
  const log = document.getElementById("log");
  if (log !== null) log.textContent += line + "\n";
}

export async function main(baseUrl: string): Promise<void> {
  const api = new Client({ baseUrl });
  const page = await api.articles.list({ include: ["author"], fields: { articles: ["title", "author"], users: ["name"] },
    sort: ["title"], meta: { articles: ["totalCount"] } });
  const authors = new Map<string, string>();
  for (const resource of page.included ?? []) {
    if (resource.type === "users") authors.set(resource.id, (resource as UsersResource).attributes.name);
  }
  const list = document.getElementById("articles");
  for (const article of page.data) {
    const item = document.createElement("li");
    const author = article.relationships.author.data;
    item.textContent = `${article.attributes.title} by ${author ? authors.get(author.id) : "nobody"}`;
    list?.appendChild(item);
  }
  show(`list ${page.data.length} of ${String(page.meta?.totalCount)}`);

  const one = await api.articles.get(page.data[0].id);
  const again = await api.articles.get(page.data[0].id, undefined, { ifNoneMatch: one.etag ?? "" });
  show(`revalidated: ${again === null ? "304" : "changed"}`);
  try {
    await api.articles.get("999999");
  } catch (error) {
    if (error instanceof JsonApiError) show(`missing: ${error.status} ${error.errors[0].title}`);
  }
}
