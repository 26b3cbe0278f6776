// Atomic operations for Orbit.js 0.17 (@orbit/jsonapi): a JSONAPISource that sends a whole
// transform as ONE request to a JSON:API server's atomic operations endpoint
// (https://jsonapi.org/ext/atomic), and the serializers it needs.
//
// What stock @orbit/jsonapi 0.17 does and does not do:
// * it ships JSONAPIAtomicOperationSerializer and JSONAPIAtomicOperationsDocumentSerializer, but
//   JSONAPISource sends one request per operation (processTransformRequests);
// * it names a record the server has not saved yet by its own client id, never by `lid`;
// * its default headers carry no `ext`;
// * JSONAPIAtomicResultsDocumentSerializer expects bare resources in `atomic:results`, where the
//   extension sends `{"data": resource}` (or `{}`).
// Each of those is an extension point; this module fills them:
//
//   import { AtomicJSONAPISource } from './atomic-source.js';
//   const source = new AtomicJSONAPISource({ schema, keyMap, host, namespace: 'api' });
//   await source.update((t) => [t.addRecord(tag), t.addRecord(article)]);   // one POST
//
// Models name their server id with a key (`keys: { remoteId: {} }`) and the source gets a
// RecordKeyMap, so a record without a remote id yet is "not saved": it is sent with
// `lid` = its Orbit id, and the result's id becomes its remoteId.

import { buildTransform } from '@orbit/data';
import {
  JSONAPIAtomicOperationSerializer,
  JSONAPIAtomicOperationsDocumentSerializer,
  JSONAPIAtomicResultsDocumentSerializer,
  JSONAPIResourceIdentitySerializer,
  JSONAPISerializers,
  JSONAPISource
} from '@orbit/jsonapi';
import { recordDiffs } from '@orbit/records';
import { toArray } from '@orbit/utils';

export const ATOMIC_EXT = 'https://jsonapi.org/ext/atomic';
export const ATOMIC_MEDIA_TYPE = `application/vnd.api+json; ext="${ATOMIC_EXT}"`;

/** Names a record without a remote id by `lid` (its Orbit id) wherever it is identified:
 *  refs, resource objects, linkage. */
export class LidIdentitySerializer extends JSONAPIResourceIdentitySerializer {
  serialize(recordIdentity) {
    const resource = super.serialize(recordIdentity);
    if (resource.id === undefined) {
      resource.lid = recordIdentity.id;
    }
    return resource;
  }
}

/** An `add` of a resource carries its `data` alone (the extension's form), not a `ref`. */
export class LidAtomicOperationSerializer extends JSONAPIAtomicOperationSerializer {
  serializeAddRecordOperation(operation) {
    return { op: 'add', data: this.resourceSerializer.serialize(operation.record) };
  }
}

/** Reads `atomic:results` as the extension writes them: `{data: resource}` or `{}`. Give
 *  `primaryRecords` (the record each operation was about) so a created resource's id is
 *  recorded as the remote id of the record that asked for it. */
export class DataAtomicResultsDocumentSerializer extends JSONAPIAtomicResultsDocumentSerializer {
  deserialize(document, options = {}) {
    const primaryRecords = options.primaryRecords || [];
    const results = (document['atomic:results'] || []).map((result, index) =>
      result && result.data
        ? this.resourceSerializer.deserialize(result.data, { primaryRecord: primaryRecords[index] })
        : undefined
    );
    return { results };
  }
}

const ATOMIC_SERIALIZERS = {
  [JSONAPISerializers.ResourceIdentity]: LidIdentitySerializer,
  [JSONAPISerializers.ResourceAtomicOperation]: LidAtomicOperationSerializer,
  [JSONAPISerializers.ResourceAtomicOperationsDocument]: JSONAPIAtomicOperationsDocumentSerializer,
  [JSONAPISerializers.ResourceAtomicResultsDocument]: DataAtomicResultsDocumentSerializer
};

/** A JSONAPISource whose updates (and pushes) are one atomic request per transform.
 *  Extra setting: `operationsURL` (default `<host>/<namespace>/operations`). */
export class AtomicJSONAPISource extends JSONAPISource {
  constructor(settings) {
    const custom = settings.serializerClassFor;
    super({
      ...settings,
      serializerClassFor: (type) => (custom && custom(type)) || ATOMIC_SERIALIZERS[type]
    });
    const base = [settings.host, settings.namespace].filter(Boolean).join('/');
    this.operationsURL = settings.operationsURL || `${base}/operations`;
  }

  /** The whole transform, one POST; one response per operation, as JSONAPISource expects. */
  async processTransformRequests(transform) {
    const operations = toArray(transform.operations);
    const processor = this.requestProcessor;
    const document = processor
      .serializerFor(JSONAPISerializers.ResourceAtomicOperationsDocument)
      .serialize({ operations });
    const details = await processor.fetch(this.operationsURL, {
      method: 'POST',
      json: document,
      headers: { 'Content-Type': ATOMIC_MEDIA_TYPE, Accept: ATOMIC_MEDIA_TYPE }
    });
    const primaryRecords = operations.map((operation) => operation.record);
    const { results } = details.document
      ? processor
          .serializerFor(JSONAPISerializers.ResourceAtomicResultsDocument)
          .deserialize(details.document, { primaryRecords })
      : { results: [] };
    return operations.map((operation, index) => {
      const updated = results[index];
      if (!updated) {
        return { transforms: [], data: operation.record, details };
      }
      const changes = recordDiffs(operation.record, updated);
      return { transforms: changes.length ? [buildTransform(changes)] : [], data: updated, details };
    });
  }
}
