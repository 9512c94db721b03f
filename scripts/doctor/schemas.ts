/**
 * The official protocol schemas the doctor validates against, vendored under
 * vendor/protocol-schemas (sources in its README), one entry per protocol version. A new release
 * is one line here once its files are vendored; the deployment's discovery names the version.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const VENDOR = path.resolve(import.meta.dirname, '../../vendor/protocol-schemas');

/** ACP version -> its JSON Schema bundle. */
const ACP_SCHEMAS: Record<string, string> = {
  '2026-04-17': 'acp-2026-04-17/schema.agentic_checkout.json',
};

/** UCP version -> the folder of its `source/schemas` tree. */
const UCP_SCHEMAS: Record<string, string> = {
  '2026-08-25': 'ucp-2026-08-25/schemas',
};

export type Validate = (body: unknown) => string | undefined;

export interface AcpSchemas {
  session: Validate;
  completedSession: Validate;
  error: Validate;
  discovery: Validate;
}

export interface UcpSchemas {
  checkout: Validate;
  errorResponse: Validate;
  businessProfile: Validate;
}

export const knownAcpVersions = () => Object.keys(ACP_SCHEMAS);
export const knownUcpVersions = () => Object.keys(UCP_SCHEMAS);

function newAjv(): Ajv2020 {
  // The published schemas carry annotation keywords of their own (`example`, `ucp_request`...).
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  return ajv;
}

/** A validator that answers undefined when the body is valid, else the first few errors in words. */
function validating(ajv: Ajv2020, ref: string): Validate {
  const validate: ValidateFunction | undefined = ajv.getSchema(ref);
  if (!validate) throw new Error(`no schema ${ref}`);
  return (body) => (validate(body) ? undefined : describe(validate.errors ?? []));
}

function describe(errors: ErrorObject[]): string {
  return errors
    .slice(0, 3)
    .map((error) => `${error.instancePath || '/'} ${error.message}`)
    .join('; ');
}

/** The ACP schemas of `version`, or undefined when none are vendored for it. */
export function acpSchemas(version: string): AcpSchemas | undefined {
  const file = ACP_SCHEMAS[version];
  if (!file) return undefined;
  const bundle = JSON.parse(readFileSync(path.join(VENDOR, file), 'utf8')) as { $id: string };
  const ajv = newAjv();
  ajv.addSchema(bundle);
  const def = (name: string) => validating(ajv, `${bundle.$id}#/$defs/${name}`);
  return {
    session: def('CheckoutSession'),
    completedSession: def('CheckoutSessionWithOrder'),
    error: def('Error'),
    discovery: def('DiscoveryResponse'),
  };
}

function jsonFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return jsonFilesUnder(full);
    return entry.name.endsWith('.json') ? [full] : [];
  });
}

/**
 * The UCP schemas of `version`: every file registered under its own `$id` (so relative `$ref`s
 * resolve offline), the three the doctor uses looked up by their path in the tree, whatever base
 * URL the release gives its ids.
 */
export function ucpSchemas(version: string): UcpSchemas | undefined {
  const folder = UCP_SCHEMAS[version];
  if (!folder) return undefined;
  const root = path.join(VENDOR, folder);
  const ajv = newAjv();
  const ids = new Map<string, string>();
  for (const file of jsonFilesUnder(root)) {
    const schema = JSON.parse(readFileSync(file, 'utf8')) as { $id: string };
    ajv.addSchema(schema);
    ids.set(path.relative(root, file).split(path.sep).join('/'), schema.$id);
  }
  const at = (file: string, pointer = '') => validating(ajv, `${ids.get(file)}${pointer}`);
  return {
    checkout: at('shopping/checkout.json'),
    errorResponse: at('common/types/error_response.json'),
    businessProfile: at('profile.json', '#/$defs/business_schema'),
  };
}
