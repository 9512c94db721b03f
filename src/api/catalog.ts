import { type TSchema, Type } from 'typebox';
import { Timestamp } from '../shared/wire.ts';
import { EVENT_TYPE_NAMES, EVENT_TYPES, type EventType } from '../webhooks/index.ts';

/**
 * What the route modules tell the OpenAPI document besides their routes: the schemas to name in
 * `components.schemas`, and the `data` of each webhook event they cause.
 */
export class SchemaCatalog {
  readonly components: Record<string, TSchema> = {};
  readonly #eventData = new Map<EventType, TSchema>();

  name(schemas: Record<string, TSchema>): void {
    Object.assign(this.components, schemas);
  }

  events(data: TSchema, ...types: EventType[]): void {
    for (const type of types) this.#eventData.set(type, data);
  }

  /**
   * The OpenAPI `webhooks` section: one POST per event type, with its envelope and `data`. A test
   * holds that every type of the event catalog is here.
   */
  webhooks(): Record<string, unknown> {
    return Object.fromEntries(
      EVENT_TYPE_NAMES.filter((type) => this.#eventData.has(type)).map((type) => [
        type,
        {
          post: {
            summary: EVENT_TYPES[type],
            parameters: SIGNATURE_HEADERS,
            requestBody: {
              required: true,
              content: {
                'application/json': { schema: envelope(type, this.#eventData.get(type) as TSchema) },
              },
            },
            responses: {
              '2XX': { description: 'Received. Any other answer (or none within 10 s) is retried.' },
              '410': { description: 'Gone: the subscription is disabled and no more events are sent.' },
            },
          },
        },
      ]),
    );
  }
}

function envelope(type: EventType, data: TSchema): TSchema {
  return Type.Object({
    id: Type.String({ description: 'The event id; also `webhook-id`, the same on every retry.' }),
    type: Type.Literal(type),
    created_at: Timestamp,
    workspace_id: Type.String(),
    data,
  });
}

/** Standard Webhooks headers, as parameters of every webhook operation. */
const SIGNATURE_HEADERS = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: 'The event id: the same across retries, so receivers can deduplicate.',
    schema: { type: 'string' },
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'Unix seconds of this attempt; reject messages more than 5 minutes off.',
    schema: { type: 'string' },
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      'Space-separated `v1,<base64 HMAC-SHA256>` signatures of `{webhook-id}.{webhook-timestamp}.{body}` ' +
      "under the subscription's `whsec_` secret; two during a secret rotation's grace period.",
    schema: { type: 'string' },
  },
];
