// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from 'typebox';
import { DeferredCompilation } from '../../src/http/deferred-compilation.ts';
import { deferredResponseSerializers, nullableUnions } from '../../src/http/serialization.ts';
import { Nullable, Timestamp } from '../../src/shared/wire.ts';

const Row = Type.Object({
  id: Type.String(),
  owner: Nullable(Type.Object({ id: Type.String(), email: Type.String() })),
  due: Nullable(Timestamp),
  tags: Type.Array(Nullable(Type.String())),
  either: Type.Union([Type.String(), Type.Integer()]),
});
const Page = Type.Object({ data: Type.Array(Row), next: Nullable(Type.String()) });

function serializerFor(schema: unknown): (data: unknown) => string {
  const compile = deferredResponseSerializers(new DeferredCompilation())?.(undefined, undefined);
  if (!compile) throw new Error('no serializer factory');
  return compile({ schema, method: 'GET', url: '/rows', httpStatus: '200' }) as (data: unknown) => string;
}

describe('response serializers', () => {
  it('write nullable fields, set or null, as JSON.stringify does', () => {
    const serialize = serializerFor(Page);
    const page = {
      data: [
        {
          id: 'a',
          owner: { id: 'u1', email: 'a@example.com' },
          due: '2026-11-26T10:00:00.000Z',
          tags: ['x', null],
          either: 'one',
        },
        { id: 'b', owner: null, due: null, tags: [], either: 2 },
      ],
      next: null,
    };
    assert.equal(serialize(page), JSON.stringify(page));
    assert.equal(serialize({ ...page, next: 'cursor' }), JSON.stringify({ ...page, next: 'cursor' }));
  });

  it('leave out what the schema does not name, inside a nullable object too', () => {
    const serialize = serializerFor(Page);
    const row = {
      id: 'a',
      owner: { id: 'u1', email: 'a@example.com', passwordHash: 'x' },
      due: null,
      tags: [],
      either: 1,
      secret: 's',
    };
    assert.deepEqual(JSON.parse(serialize({ data: [row], next: null })), {
      data: [{ id: 'a', owner: { id: 'u1', email: 'a@example.com' }, due: null, tags: [], either: 1 }],
      next: null,
    });
  });

  it('turn only a union of one typed schema and null into nullable', () => {
    const rewritten = nullableUnions(Row) as { properties: Record<string, Record<string, unknown>> };
    assert.equal(rewritten.properties.owner?.nullable, true);
    assert.equal(rewritten.properties.owner?.type, 'object');
    assert.equal(rewritten.properties.due?.nullable, true);
    assert.ok(Array.isArray(rewritten.properties.either?.anyOf), 'a union of two types stays a union');
    assert.ok(
      Array.isArray((Row.properties.owner as { anyOf?: unknown }).anyOf),
      'the route schema is untouched',
    );
  });
});
