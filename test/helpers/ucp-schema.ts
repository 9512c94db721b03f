import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BASE = 'https://ucp.dev/schemas/';

/** The UCP releases whose official schemas are vendored under vendor/protocol-schemas. */
export type UcpRelease = '2026-08-25' | '2026-04-08';

interface Layout {
  errorResponse: string;
  businessProfile: string;
  /** 2026-04-08 has no schema of the whole profile document, only of its `ucp` member. */
  profilePart: (profile: unknown) => unknown;
}

/** Where each release keeps the schemas the tests use (2026-04-08 predates `common/types/`). */
const LAYOUT: Record<UcpRelease, Layout> = {
  '2026-08-25': {
    errorResponse: 'common/types/error_response.json',
    businessProfile: 'profile.json#/$defs/business_schema',
    profilePart: (profile) => profile,
  },
  '2026-04-08': {
    errorResponse: 'shopping/types/error_response.json',
    businessProfile: 'ucp.json#/$defs/business_schema',
    profilePart: (profile) => (profile as { ucp?: unknown }).ucp,
  },
};

function jsonFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return jsonFilesUnder(full);
    return entry.name.endsWith('.json') ? [full] : [];
  });
}

/**
 * Every vendored schema of one release, registered under its `$id` so relative `$ref`s resolve
 * without a network. The schemas carry annotation keywords of their own (`ucp_request`, `name`,
 * `requires`...), hence `strict: false`.
 */
function loadAjv(release: UcpRelease): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const dir = path.resolve(REPO_ROOT, `vendor/protocol-schemas/ucp-${release}/schemas`);
  for (const file of jsonFilesUnder(dir)) {
    const schema = JSON.parse(readFileSync(file, 'utf8')) as { $id?: string };
    if (!schema.$id) throw new Error(`${file} has no $id`);
    ajv.addSchema(schema);
  }
  return ajv;
}

function assertValid(validate: ValidateFunction, body: unknown, what: string): void {
  const valid = validate(body);
  assert.ok(
    valid,
    `${what} does not match the official schema: ${JSON.stringify(validate.errors, null, 1)}\n${JSON.stringify(body)}`,
  );
}

export interface UcpSchemas {
  checkout(body: unknown): void;
  errorResponse(body: unknown): void;
  businessProfile(body: unknown): void;
  /** Whether the release defines a schema under this `$id` (relative to https://ucp.dev/schemas/). */
  has(ref: string): boolean;
}

const cache = new Map<UcpRelease, UcpSchemas>();

/** Assertions against the official schemas of one UCP release. */
export function ucpSchemas(release: UcpRelease): UcpSchemas {
  const known = cache.get(release);
  if (known) return known;
  const ajv = loadAjv(release);
  const validator = (ref: string): ValidateFunction => {
    const validate = ajv.getSchema(`${BASE}${ref}`);
    if (!validate) throw new Error(`no UCP ${release} schema ${ref}`);
    return validate;
  };
  const layout = LAYOUT[release];
  const checkout = validator('shopping/checkout.json');
  const errorResponse = validator(layout.errorResponse);
  const businessProfile = validator(layout.businessProfile);
  const schemas: UcpSchemas = {
    checkout: (body) => assertValid(checkout, body, `checkout (UCP ${release})`),
    errorResponse: (body) => assertValid(errorResponse, body, `error_response (UCP ${release})`),
    businessProfile: (body) =>
      assertValid(businessProfile, layout.profilePart(body), `business profile (UCP ${release})`),
    has: (ref) => ajv.getSchema(`${BASE}${ref}`) !== undefined,
  };
  cache.set(release, schemas);
  return schemas;
}

export function assertUcpCheckout(body: unknown): void {
  ucpSchemas('2026-08-25').checkout(body);
}

export function assertUcpErrorResponse(body: unknown): void {
  ucpSchemas('2026-08-25').errorResponse(body);
}

export function assertUcpBusinessProfile(body: unknown): void {
  ucpSchemas('2026-08-25').businessProfile(body);
}

/** An order document (GET /orders/{id} and order webhooks) against `shopping/order.json`. */
let orderValidator: ValidateFunction | undefined;
export function assertUcpOrder(body: unknown): void {
  orderValidator ??= loadAjv('2026-08-25').getSchema(`${BASE}shopping/order.json`);
  if (!orderValidator) throw new Error('no UCP 2026-08-25 order schema');
  assertValid(orderValidator, body, 'order (UCP 2026-08-25)');
}
