// The test client: one Orbit transform (an article with two new tags) applied through
// AtomicJSONAPISource as one request, against a running server.
//
//   node article-with-tags.js <api base URL, e.g. http://127.0.0.1:6543/api> <bearer token> <suffix>
//
// Prints one JSON line: the requests Orbit sent (method, URL, body) and the ids the server gave
// the three records (as Orbit's key map now knows them).

import { Orbit } from '@orbit/core';
import { RecordKeyMap, RecordSchema } from '@orbit/records';

import { AtomicJSONAPISource } from './atomic-source.js';

const [base, token, suffix] = process.argv.slice(2);
const url = new URL(base);

const schema = new RecordSchema({
  models: {
    articles: {
      keys: { remoteId: {} },
      attributes: { title: { type: 'string' }, body: { type: 'string' }, status: { type: 'string' } },
      relationships: { tags: { kind: 'hasMany', type: 'tags', inverse: 'articles' } }
    },
    tags: {
      keys: { remoteId: {} },
      attributes: { name: { type: 'string' } },
      relationships: { articles: { kind: 'hasMany', type: 'articles', inverse: 'tags' } }
    }
  }
});

const requests = [];
const realFetch = globalThis.fetch;
Orbit.fetch = (resource, init = {}) => {
  requests.push({ method: init.method || 'GET', url: String(resource), headers: init.headers, body: init.body ? JSON.parse(init.body) : null });
  return realFetch(resource, init);
};

const keyMap = new RecordKeyMap();
const source = new AtomicJSONAPISource({
  schema,
  keyMap,
  host: url.origin,
  namespace: url.pathname.replace(/^\/|\/$/g, ''),
  defaultFetchSettings: { headers: { Authorization: `Bearer ${token}` } }
});

const first = { type: 'tags', id: schema.generateId('tags'), attributes: { name: `orbit-${suffix}` } };
const second = { type: 'tags', id: schema.generateId('tags'), attributes: { name: `atomic-${suffix}` } };
const article = {
  type: 'articles',
  id: schema.generateId('articles'),
  attributes: { title: `Written by Orbit ${suffix}`, status: 'published' },
  relationships: { tags: { data: [{ type: 'tags', id: first.id }, { type: 'tags', id: second.id }] } }
};

try {
  await source.update((t) => [t.addRecord(first), t.addRecord(second), t.addRecord(article)]);
} catch (error) {
  console.log(JSON.stringify({ error: String(error), data: error.data || null, requests }));
  process.exit(1);
}
const remote = (record) => keyMap.idToKey(record.type, 'remoteId', record.id);
console.log(JSON.stringify({ requests, article: remote(article), tags: [remote(first), remote(second)] }));
