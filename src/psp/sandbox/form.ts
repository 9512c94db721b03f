import qs from 'qs';
import { invalidRequest } from './errors.ts';

/** Decoded request parameters: nested objects, arrays and string leaves (numbers/booleans from JSON bodies). */
export type Params = { readonly [name: string]: unknown };

const FORM_LIMITS = { depth: 5, arrayLimit: 100, parameterLimit: 1000 } as const;
const MAX_STRING_LENGTH = 5000;
const MAX_METADATA_KEYS = 50;
const MAX_METADATA_KEY_LENGTH = 40;
const MAX_METADATA_VALUE_LENGTH = 500;

/** Parses `a[b][c]=v`, `a[]=x`, `a[0]=x` the way Stripe's API does; refuses bodies beyond the limits. */
export function parseForm(text: string): Params {
  try {
    return qs.parse(text, { ...FORM_LIMITS, strictDepth: true, throwOnLimitExceeded: true });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw invalidRequest(`Invalid form-encoded parameters: ${reason}`, { code: 'parameter_invalid_body' });
  }
}

/** Query strings are parsed leniently (excess nesting is kept as literal keys): a router hook cannot refuse them. */
export function parseQuery(text: string): Params {
  return qs.parse(text, FORM_LIMITS);
}

export function bodyParams(body: unknown): Params {
  if (body === undefined || body === null) return {};
  if (isParams(body)) return body;
  throw invalidRequest('The request body must contain named parameters.', { code: 'parameter_invalid_body' });
}

function isParams(value: unknown): value is Params {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Stripe treats an empty string as "not set". */
function isUnset(value: unknown): boolean {
  return value === undefined || value === null || value === '';
}

export function readString(value: unknown, param: string): string | undefined {
  if (isUnset(value)) return undefined;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value !== 'string') {
    throw invalidRequest(`Invalid string: ${param} must be a string.`, {
      code: 'parameter_invalid_string',
      param,
    });
  }
  if (value.length > MAX_STRING_LENGTH) {
    throw invalidRequest(`Invalid string: ${param} must be at most ${MAX_STRING_LENGTH} characters.`, {
      code: 'parameter_invalid_string',
      param,
    });
  }
  return value;
}

export function requireString(value: unknown, param: string): string {
  const text = readString(value, param);
  if (text === undefined) throw missing(param);
  return text;
}

export interface IntegerRange {
  readonly min: number;
  readonly max: number;
}

export function readInteger(value: unknown, param: string, range: IntegerRange): number | undefined {
  if (isUnset(value)) return undefined;
  const integer = toSafeInteger(value);
  if (integer === undefined) {
    throw invalidRequest(`Invalid integer: ${describe(value)}`, { code: 'parameter_invalid_integer', param });
  }
  if (integer < range.min) {
    throw invalidRequest(`This value must be greater than or equal to ${range.min}.`, {
      code: 'parameter_invalid_integer',
      param,
    });
  }
  if (integer > range.max) {
    throw invalidRequest(`This value must be less than or equal to ${range.max}.`, {
      code: 'parameter_invalid_integer',
      param,
    });
  }
  return integer;
}

export function requireInteger(value: unknown, param: string, range: IntegerRange): number {
  const integer = readInteger(value, param, range);
  if (integer === undefined) throw missing(param);
  return integer;
}

function toSafeInteger(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : undefined;
  if (typeof value !== 'string' || !/^-?\d{1,16}$/.test(value)) return undefined;
  const integer = Number(value);
  return Number.isSafeInteger(integer) ? integer : undefined;
}

export function readBoolean(value: unknown, param: string): boolean | undefined {
  if (isUnset(value)) return undefined;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw invalidRequest(`Invalid boolean: ${describe(value)}`, { code: 'parameter_invalid_boolean', param });
}

export function readEnum<const T extends string>(
  value: unknown,
  param: string,
  allowed: readonly T[],
): T | undefined {
  const text = readString(value, param);
  if (text === undefined) return undefined;
  const match = allowed.find((candidate) => candidate === text);
  if (match === undefined) {
    throw invalidRequest(`Invalid ${param}: must be one of ${allowed.join(', ')}`, {
      code: 'parameter_invalid_string',
      param,
    });
  }
  return match;
}

export function readObject(value: unknown, param: string): Params {
  if (isUnset(value)) return {};
  if (isParams(value)) return value;
  throw invalidRequest(`Invalid object: ${param} must be a hash of parameters.`, {
    code: 'parameter_invalid_object',
    param,
  });
}

/** Metadata-style hashes (`metadata[k]=v`): flat string values within Stripe's size limits. */
export function readStringMap(value: unknown, param: string): Record<string, string> {
  const entries = Object.entries(readObject(value, param));
  if (entries.length > MAX_METADATA_KEYS) {
    throw invalidRequest(`${param} can have at most ${MAX_METADATA_KEYS} keys.`, {
      code: 'parameter_invalid_object',
      param,
    });
  }
  const map: Record<string, string> = {};
  for (const [key, raw] of entries) {
    const keyParam = `${param}[${key}]`;
    const text = readString(raw, keyParam) ?? '';
    if (key.length > MAX_METADATA_KEY_LENGTH || text.length > MAX_METADATA_VALUE_LENGTH) {
      throw invalidRequest(
        `${param} keys are limited to ${MAX_METADATA_KEY_LENGTH} characters and values to ${MAX_METADATA_VALUE_LENGTH}.`,
        { code: 'parameter_invalid_string', param: keyParam },
      );
    }
    map[key] = text;
  }
  return map;
}

export function requireCurrency(value: unknown, param: string): string {
  const currency = requireString(value, param).toLowerCase();
  if (!/^[a-z]{3}$/.test(currency)) {
    throw invalidRequest(`Invalid currency: ${currency}`, { code: 'parameter_invalid_string', param });
  }
  return currency;
}

function missing(param: string): Error {
  return invalidRequest(`Missing required param: ${param}.`, { code: 'parameter_missing', param });
}

function describe(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}
