import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The official UCP 2026-08-25 schemas the tests validate against, vendored under vendor/protocol-schemas. */
const UCP_SCHEMA_DIR = path.resolve(REPO_ROOT, 'vendor/protocol-schemas/ucp-2026-08-25/schemas');
const BASE = 'https://ucp.dev/schemas/';

function jsonFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return jsonFilesUnder(full);
    return entry.name.endsWith('.json') ? [full] : [];
  });
}

/**
 * Every vendored UCP 2026-08-25 schema, registered under its `$id` so relative `$ref`s resolve
 * without a network. The schemas carry annotation keywords of their own (`ucp_request`, `name`,
 * `requires`...), hence `strict: false`.
 */
function loadAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  for (const file of jsonFilesUnder(UCP_SCHEMA_DIR)) {
    const schema = JSON.parse(readFileSync(file, 'utf8')) as { $id?: string };
    if (!schema.$id) throw new Error(`${file} has no $id`);
    ajv.addSchema(schema);
  }
  return ajv;
}

const ajv = loadAjv();

function validator(ref: string): ValidateFunction {
  const validate = ajv.getSchema(`${BASE}${ref}`);
  if (!validate) throw new Error(`no UCP schema ${ref}`);
  return validate;
}

const checkout = validator('shopping/checkout.json');
const errorResponse = validator('common/types/error_response.json');
const businessProfile = validator('profile.json#/$defs/business_schema');

function assertValid(validate: ValidateFunction, body: unknown, what: string): void {
  const valid = validate(body);
  assert.ok(
    valid,
    `${what} does not match the official schema: ${JSON.stringify(validate.errors, null, 1)}\n${JSON.stringify(body)}`,
  );
}

export function assertUcpCheckout(body: unknown): void {
  assertValid(checkout, body, 'checkout');
}

export function assertUcpErrorResponse(body: unknown): void {
  assertValid(errorResponse, body, 'error_response');
}

export function assertUcpBusinessProfile(body: unknown): void {
  assertValid(businessProfile, body, 'business profile');
}
