import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';
import type { DeferredCompilation } from './deferred-compilation.ts';

type SerializerFactory = NonNullable<
  NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']
>['buildSerializer'];

/**
 * Fastify's own response serializers (fast-json-stringify), each compiled when its route first
 * answers with that status (or by `compileAll`), with nullable unions written as `nullable`.
 */
export function deferredResponseSerializers(deferred: DeferredCompilation): SerializerFactory {
  const build = SerializerSelector();
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options);
    return (route) => {
      const serializer = deferred.defer(
        `the ${route.httpStatus} answer of ${route.method} ${route.url}`,
        () => compile({ ...route, schema: nullableUnions(route.schema) }),
      );
      return (data) => serializer()(data);
    };
  };
}

type Schema = Record<string, unknown>;

const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The serializer's copy of a response schema, with each `T | null` union (our `Nullable`, an
 * `anyOf` of a typed schema and null) written as `T` with `nullable: true`. fast-json-stringify
 * picks an `anyOf` branch by validating the value against each branch with Ajv, a whole object
 * per nullable field per row; `nullable` is one `=== null` test. The output is the same JSON.
 * The schema that validates, documents and types the route is not touched.
 */
export function nullableUnions(schema: unknown): unknown {
  if (!isSchema(schema)) return schema;
  const copy: Schema = { ...schema };
  const eachValue = (value: unknown) =>
    isSchema(value)
      ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, nullableUnions(v)]))
      : value;
  const eachItem = (value: unknown) =>
    Array.isArray(value) ? value.map(nullableUnions) : nullableUnions(value);
  for (const key of ['properties', 'patternProperties', '$defs', 'definitions'])
    if (key in copy) copy[key] = eachValue(copy[key]);
  for (const key of ['items', 'prefixItems', 'additionalProperties', 'anyOf', 'oneOf', 'allOf', 'not'])
    if (key in copy) copy[key] = eachItem(copy[key]);
  const branches = copy.anyOf;
  if (!Array.isArray(branches) || branches.length !== 2) return copy;
  const typed = branches.filter((branch) => !(isSchema(branch) && branch.type === 'null'));
  const [only] = typed;
  if (typed.length !== 1 || !isSchema(only) || typeof only.type !== 'string' || only.type === 'null')
    return copy;
  const { anyOf: _, ...siblings } = copy;
  return { ...siblings, ...only, nullable: true };
}
