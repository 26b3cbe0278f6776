// The test client: spraypaint (Graphiti's JavaScript client, from npm) saving an article with new
// children against a running blog with jsonapi.graphiti_sideposting = true (docs/sideposting.rst,
// "spraypaint and Graphiti's format").
//
//   node article-with-children.js <api base URL, e.g. http://127.0.0.1:6543/api> <bearer token> <suffix>
//
// Four saves, each one request, as spraypaint sends them (method + temp-id, plain media type):
//   1. new Article with two new tags and two new comments: save({with: ["tags", "comments"]})
//   2. one new comment saved on its own (spraypaint sends the temp-id it keeps: no included);
//      the saved article gets a third, new comment and a new title: save({with: "comments"})
//   3. one tag disassociated, one comment destroyed: save({with: ["tags", "comments"]})
//   4. a new article whose new tag has a name over 64 characters: save() answers false, the
//      tag's errors hold the server's message
// Prints one JSON line: the requests sent (method, URL, Content-Type, body) and what spraypaint's
// models hold after each save (ids bound, isPersisted, errors).

const { SpraypaintBase, attr, hasMany, belongsTo } = require('spraypaint');

const [base, token, suffix] = process.argv.slice(2);
const url = new URL(base);

const requests = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (resource, init = {}) => {
  const response = await realFetch(resource, init);
  requests.push({
    method: init.method || 'GET', url: String(resource), contentType: (init.headers || {})['Content-Type'],
    body: init.body ? JSON.parse(init.body) : null, status: response.status
  });
  return response;
};

const ApplicationRecord = SpraypaintBase.extend({
  static: { baseUrl: url.origin, apiNamespace: url.pathname, keyCase: { server: 'camel', client: 'camel' }, jwtStorage: false }
});
ApplicationRecord.generateAuthHeader = (jwt) => `Bearer ${jwt}`;
ApplicationRecord.setJWT(token);

const Tag = ApplicationRecord.extend({ static: { jsonapiType: 'tags' }, attrs: { name: attr(), articles: hasMany('articles') } });
const Comment = ApplicationRecord.extend({ static: { jsonapiType: 'comments' }, attrs: { body: attr(), article: belongsTo('articles') } });
const Article = ApplicationRecord.extend({
  static: { jsonapiType: 'articles' },
  attrs: { title: attr(), status: attr(), body: attr(), tags: hasMany('tags'), comments: hasMany('comments') }
});

const state = (model) => ({ id: model.id || null, persisted: model.isPersisted });

async function main() {
  const report = { requests };
  const tags = [new Tag({ name: `spray-${suffix}` }), new Tag({ name: `paint-${suffix}` })];
  const comments = [new Comment({ body: 'first' }), new Comment({ body: 'second' })];
  const article = new Article({ title: `Saved by spraypaint ${suffix}`, status: 'published', tags, comments });
  report.created = await article.save({ with: ['tags', 'comments'] });
  report.article = state(article);
  report.tags = tags.map(state);
  report.comments = comments.map(state);
  report.tagsAfterCreate = article.tags.map((tag) => tag.id);

  // a child saved on its own keeps the temp-id the answer echoed, and sends it
  report.childTempId = comments[1].temp_id || null;
  comments[1].body = 'second, edited';
  report.childSaved = await comments[1].save();

  const third = new Comment({ body: 'third' });
  article.comments.push(third);
  article.title = `Saved again ${suffix}`;
  report.updated = await article.save({ with: 'comments' });
  report.third = state(third);
  report.commentsAfterUpdate = article.comments.map((comment) => comment.id).sort();

  article.tags[0].isMarkedForDisassociation = true;
  const destroyed = article.comments.find((comment) => comment.id === comments[0].id);
  destroyed.isMarkedForDestruction = true;
  report.unlinked = await article.save({ with: ['tags', 'comments'] });
  report.tagsAfterUnlink = article.tags.map((tag) => tag.id);
  report.commentsAfterUnlink = article.comments.map((comment) => comment.id).sort();

  const bad = new Tag({ name: 'x'.repeat(65) });
  const refused = new Article({ title: `Refused ${suffix}`, status: 'published', tags: [bad] });
  report.refused = await refused.save({ with: 'tags' });
  report.refusedArticle = state(refused);
  report.badTag = { ...state(bad), errors: Object.fromEntries(Object.entries(bad.errors).map(([k, v]) => [k, v.message])) };
  console.log(JSON.stringify(report));
}

main().catch((error) => {
  console.log(JSON.stringify({ error: String(error), stack: error.stack, requests }));
  process.exit(1);
});
