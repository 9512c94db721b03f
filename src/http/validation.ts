import type { FastifyError, FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import { Value } from 'typebox/value';
import type { DeferredCompilation } from './deferred-compilation.ts';

/**
 * The one request validator: TypeBox, every route of every surface, each schema compiled once.
 * Its errors become one neutral list of issues here; each surface words that list in its own
 * error format (`problem.ts`, the ACP and UCP `errors.ts`).
 */

const compiled = new WeakMap<TSchema, Validator>();

/** The compiled check of a schema, built the first time any route or caller asks for it. */
export function compiledSchema(schema: TSchema): Validator {
  let validator = compiled.get(schema);
  if (!validator) {
    validator = Compile(schema);
    compiled.set(schema, validator);
  }
  return validator;
}

/**
 * Fastify's validator compiler for the whole app. Query strings, path parameters and headers
 * arrive as text, so numbers and booleans their schemas declare are read from it first. A body
 * is JSON and is checked as it came, nothing coerced or filled in; only on the routes that
 * `nullAsAbsent` names is an optional field sent as `null` (where its schema has no null) taken
 * as left out, as many agent clients write an unset field.
 */
export function requestValidator(options: {
  nullAsAbsent: (routeUrl: string) => boolean;
  /** Compiles each schema on its route's first request (or when everything is compiled). */
  deferred: DeferredCompilation;
}): FastifySchemaCompiler<TSchema> {
  return ({ schema, httpPart, method, url }) => {
    const compiled = options.deferred.defer(`the ${httpPart} of ${method} ${url}`, () =>
      compiledSchema(schema),
    );
    const dropsNulls = httpPart === 'body' && options.nullAsAbsent(url);
    const numbers = httpPart === 'body' ? [] : numberFields(schema);
    return (input: unknown) => {
      const validator = compiled();
      const value = httpPart === 'body' ? input : fromText(schema, numbers, input);
      if (validator.Check(value)) return { value };
      if (dropsNulls && dropNullOptionals(schema, value) && validator.Check(value)) return { value };
      return { error: validator.Errors(value) };
    };
  };
}

/** How a number is written in a query string, a path or a header: decimal digits, no exponent. */
const NUMBER_TEXT = { integer: /^-?\d+$/, number: /^-?\d+(\.\d+)?$/ } as const;

/** The top-level properties of a query string, path or header schema that hold numbers. */
function numberFields(schema: TSchema): [name: string, text: RegExp][] {
  const properties = (schema as { properties?: Record<string, TSchema> }).properties ?? {};
  return Object.entries(properties).flatMap(([name, property]): [string, RegExp][] => {
    const type = (property as { type?: unknown }).type;
    return type === 'integer' || type === 'number' ? [[name, NUMBER_TEXT[type]]] : [];
  });
}

/**
 * Reads the numbers and booleans a query string, path or header schema declares from their text.
 * A number is read only from plain decimal text: TypeBox alone reads `1.5` as the integer 1 and
 * `0x2` as 2, so such text is left as it came and fails its schema.
 */
function fromText(schema: TSchema, numbers: [name: string, text: RegExp][], input: unknown): unknown {
  // Most reads send no query string: nothing to read, and Convert would walk the schema for nothing.
  if (isRecord(input) && isEmpty(input)) return input;
  if (numbers.length === 0 || !isRecord(input)) return Value.Convert(schema, input);
  // Convert changes its input in place.
  const texts = numbers.map(([name, text]) => [name, input[name], text] as const);
  const value = Value.Convert(schema, input);
  if (!isRecord(value)) return value;
  for (const [name, given, text] of texts) {
    if (typeof given === 'string' && !text.test(given)) value[name] = given;
  }
  return value;
}

function isEmpty(record: Record<string, unknown>): boolean {
  for (const _ in record) return false;
  return true;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Removes, in place, each optional property whose value is null and whose schema allows no null. */
function dropNullOptionals(schema: TSchema, value: unknown): boolean {
  if (Array.isArray(value)) {
    // `items` is one schema for every item, or (a tuple) one schema per position.
    const items = (schema as { items?: TSchema | TSchema[] }).items;
    if (items === undefined) return false;
    const itemSchema = (index: number) => (Array.isArray(items) ? items[index] : items);
    return value
      .map((item, index) => {
        const schemaOfItem = itemSchema(index);
        return schemaOfItem !== undefined && dropNullOptionals(schemaOfItem, item);
      })
      .some(Boolean);
  }
  const properties = (schema as { properties?: Record<string, TSchema> }).properties;
  if (value === null || typeof value !== 'object' || properties === undefined) return false;
  const required = new Set((schema as { required?: string[] }).required ?? []);
  const record = value as Record<string, unknown>;
  let dropped = false;
  for (const [name, property] of Object.entries(properties)) {
    if (!Object.hasOwn(record, name)) continue;
    if (record[name] === null && !required.has(name) && !allowsNull(property)) {
      delete record[name];
      dropped = true;
    } else if (dropNullOptionals(property, record[name])) dropped = true;
  }
  return dropped;
}

function allowsNull(schema: TSchema): boolean {
  const { type, anyOf } = schema as { type?: unknown; anyOf?: TSchema[] };
  return type === 'null' || (Array.isArray(type) && type.includes('null')) || (anyOf ?? []).some(allowsNull);
}

/** One thing wrong with a request part, in no surface's words yet. */
export interface ValidationIssue {
  /** Property names and array indexes from the part's root to the field (decoded, not a pointer). */
  path: string[];
  /**
   * `missing`: a required property is absent; `unknown`: the schema allows no property or item
   * there; `invalid`: the value breaks a rule of its schema.
   */
  kind: 'missing' | 'unknown' | 'invalid';
  /** What is wrong, as a phrase after the field's name: "is required", "must be integer". */
  problem: string;
}

/** A request Fastify refused for its schema: which part (`body`, `querystring`, ...) and why. */
export interface InvalidRequestPart {
  part: string;
  issues: ValidationIssue[];
}

/** The issues of a Fastify schema validation error, or undefined for any other error. */
export function invalidRequestPart(error: FastifyError): InvalidRequestPart | undefined {
  if (!error.validation) return undefined;
  return { part: error.validationContext ?? 'body', issues: validationIssues(error.validation) };
}

/**
 * TypeBox's errors as issues, each once: each missing or unknown property is an issue at that
 * property.
 */
export function validationIssues(errors: readonly FastifySchemaValidationError[]): ValidationIssue[] {
  const issues = errors.flatMap((error): ValidationIssue[] => {
    const path = pointerSegments(error.instancePath);
    switch (error.keyword) {
      case 'required':
        return names(error.params.requiredProperties).map((name) => ({
          path: [...path, name],
          kind: 'missing',
          problem: 'is required',
        }));
      case 'additionalProperties':
        return names(error.params.additionalProperties).map((name) => ({
          path: [...path, name],
          kind: 'unknown',
          problem: 'is not a known field',
        }));
      case 'boolean':
        // A property refused by `additionalProperties: false` is reported by its object above.
        if (error.schemaPath.endsWith('/additionalProperties')) return [];
        // An item past the end of a tuple: the array is too long, reported once at the array.
        if (error.schemaPath.endsWith('/additionalItems')) {
          return [{ path: path.slice(0, -1), kind: 'invalid', problem: 'has more items than allowed' }];
        }
        return [{ path, kind: 'unknown', problem: 'is not allowed here' }];
      case 'const':
        return [{ path, kind: 'invalid', problem: `must be ${JSON.stringify(error.params.allowedValue)}` }];
      case 'format':
        return [{ path, kind: 'invalid', problem: `must be a valid ${String(error.params.format)}` }];
      default:
        return [{ path, kind: 'invalid', problem: error.message ?? 'is not valid' }];
    }
  });
  const seen = new Set<string>();
  return issues.filter((issue) => {
    const key = JSON.stringify(issue);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function names(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : [];
}

/** `/line_items/0/a~1b` -> `['line_items', '0', 'a/b']` (RFC 6901). */
function pointerSegments(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .split('/')
    .slice(1)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** A path as a JSON Pointer (RFC 6901), escaped again: `['a/b', '0']` -> `/a~1b/0`. */
export function jsonPointer(path: readonly string[]): string {
  return path.map((segment) => `/${segment.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

/** An issue addressed by JSONPath, as the protocols (ACP, UCP) word it: their `missing` or `invalid`. */
export interface JsonPathIssue {
  code: 'missing' | 'invalid';
  path: string;
  text: string;
}

export function jsonPathIssue(issue: ValidationIssue): JsonPathIssue {
  const path = jsonPath(issue.path);
  if (issue.kind === 'missing') return { code: 'missing', path, text: `${path} is required.` };
  const subject = path === '$' ? 'The request body' : path;
  return { code: 'invalid', path, text: `${subject} ${issue.problem}.` };
}

/**
 * `['line_items', '0', 'a-b']` -> `$.line_items[0]['a-b']` (RFC 9535: the shorthand where a name
 * allows it, a quoted bracket where it does not).
 */
function jsonPath(segments: readonly string[]): string {
  return segments.reduce((path, segment) => {
    if (/^\d+$/.test(segment)) return `${path}[${segment}]`;
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(segment)) return `${path}.${segment}`;
    return `${path}['${segment.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}']`;
  }, '$');
}
