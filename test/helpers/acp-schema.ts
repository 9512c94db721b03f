import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/** The official ACP 2026-04-17 JSON Schema bundle, vendored under vendor/protocol-schemas. */
const SCHEMA_URL = new URL(
  '../../vendor/protocol-schemas/acp-2026-04-17/schema.agentic_checkout.json',
  import.meta.url,
);

type Definition = 'CheckoutSession' | 'CheckoutSessionWithOrder' | 'Error' | 'DiscoveryResponse' | 'Order';

const validators = compileValidators([
  'CheckoutSession',
  'CheckoutSessionWithOrder',
  'Error',
  'DiscoveryResponse',
  'Order',
]);

function compileValidators(definitions: Definition[]): Record<Definition, ValidateFunction> {
  const bundle = JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as { $id: string };
  // The bundle carries `example` annotations, which strict mode would reject as unknown keywords.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema(bundle);
  return Object.fromEntries(
    definitions.map((name) => {
      const validate = ajv.getSchema(`${bundle.$id}#/$defs/${name}`);
      if (!validate) throw new Error(`the ACP schema has no $defs.${name}`);
      return [name, validate];
    }),
  ) as Record<Definition, ValidateFunction>;
}

function assertValid(definition: Definition, body: unknown): void {
  const validate = validators[definition];
  assert.ok(
    validate(body),
    `not a valid ACP ${definition}: ${JSON.stringify(validate.errors, null, 1)}\n${JSON.stringify(body)}`,
  );
}

/** An open or closed session without an order. */
export const assertAcpSession = (body: unknown) => assertValid('CheckoutSession', body);
/** A completed session, which must carry its order. */
export const assertAcpCompletedSession = (body: unknown) => assertValid('CheckoutSessionWithOrder', body);
/** ACP's flat protocol Error. */
export const assertAcpError = (body: unknown) => assertValid('Error', body);
export const assertAcpDiscovery = (body: unknown) => assertValid('DiscoveryResponse', body);
/** An order, as a completed session carries it and as the order webhooks deliver it. */
export const assertAcpOrder = (body: unknown) => assertValid('Order', body);
