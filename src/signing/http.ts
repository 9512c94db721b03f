import { createHash, createPublicKey, type KeyObject, sign, timingSafeEqual, verify } from 'node:crypto';
import {
  type BareItem,
  type Dictionary,
  type InnerList,
  isInnerList,
  ParseError,
  parseDictionary,
  serializeInnerList,
} from 'structured-headers';
import { err, ok, type Result } from '../shared/result.ts';
import type { SigningKey } from './keys.ts';

/**
 * RFC 9421 HTTP Message Signatures as UCP profiles them (docs/specification/signatures.md):
 * ECDSA P-256 with SHA-256 (ES256), raw `r||s` signatures, `keyid` naming a JWK of the signer's
 * profile and no `alg` parameter, bodies bound by an RFC 9530 `Content-Digest` (sha-256) over the
 * exact bytes sent. Only what UCP uses is here: no component parameters, one algorithm.
 */

const LABEL = 'sig1';
/** How far a signer's clock may run ahead of ours before its `created` is refused. */
const CLOCK_SKEW_S = 60;

/** A header's value as a signature covers it: several lines joined, surrounding space trimmed. */
export type HeaderLookup = (name: string) => string | undefined;

export interface RequestParts {
  method: string;
  /** Host and port as the client addressed them (`@authority`), lower case. */
  authority: string;
  /** The path as sent, without the query. */
  path: string;
  /** The query as sent, without its `?`; empty for none. */
  query: string;
  header: HeaderLookup;
}

export interface ResponseParts {
  status: number;
  header: HeaderLookup;
}

/** `sha-256=:<base64>:` of exactly these bytes. */
export function contentDigest(body: Buffer | string): string {
  return `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
}

function requestComponent(name: string, parts: RequestParts): string | undefined {
  switch (name) {
    case '@method':
      return parts.method.toUpperCase();
    case '@authority':
      return parts.authority.toLowerCase();
    case '@path':
      return parts.path;
    case '@query':
      return `?${parts.query}`;
    case '@target-uri':
    case '@request-target':
    case '@scheme':
    case '@status':
      return undefined;
    default:
      return parts.header(name);
  }
}

function responseComponent(name: string, parts: ResponseParts): string | undefined {
  if (name === '@status') return String(parts.status);
  return name.startsWith('@') ? undefined : parts.header(name);
}

/** The signature base (RFC 9421 §2.5), or the first component the message lacks. */
function signatureBase(
  components: readonly string[],
  signatureParams: string,
  valueFor: (name: string) => string | undefined,
): Result<string, string> {
  const lines: string[] = [];
  for (const name of components) {
    const value = valueFor(name);
    if (value === undefined) return err(name);
    lines.push(`"${name}": ${value}`);
  }
  lines.push(`"@signature-params": ${signatureParams}`);
  return ok(lines.join('\n'));
}

function signatureParams(components: readonly string[], params: { created: number; keyid: string }): string {
  return serializeInnerList([
    components.map((name) => [name, new Map()]),
    new Map<string, BareItem>([
      ['created', params.created],
      ['keyid', params.keyid],
    ]),
  ]);
}

function signed(
  key: SigningKey,
  components: readonly string[],
  base: (params: string) => Result<string, string>,
  at: Date,
) {
  const params = signatureParams(components, { created: Math.floor(at.getTime() / 1000), keyid: key.kid });
  const text = base(params);
  if (!text.ok) throw new Error(`cannot sign a message without its ${text.error}`);
  const value = sign('sha256', Buffer.from(text.value), { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
  return { 'signature-input': `${LABEL}=${params}`, signature: `${LABEL}=:${value.toString('base64')}:` };
}

/** Signature-Input and Signature for a response: `@status`, and the body's digest and type. */
export function signResponse(key: SigningKey, response: ResponseParts, at: Date): Record<string, string> {
  const components = [
    '@status',
    ...['content-digest', 'content-type'].filter((name) => response.header(name) !== undefined),
  ];
  return signed(
    key,
    components,
    (params) => signatureBase(components, params, (name) => responseComponent(name, response)),
    at,
  );
}

/** Signature-Input and Signature for a request this service sends (a webhook), over `components`. */
export function signRequest(
  key: SigningKey,
  request: RequestParts,
  components: readonly string[],
  at: Date,
): Record<string, string> {
  return signed(
    key,
    components,
    (params) => signatureBase(components, params, (name) => requestComponent(name, request)),
    at,
  );
}

/** Why a signed request is refused, with UCP's code for it (overview, "Signature Errors"). */
export interface SignatureFailure {
  code: 'signature_invalid' | 'key_not_found' | 'digest_mismatch' | 'algorithm_unsupported';
  message: string;
}

/** A public key of the signer's profile, as published (RFC 7517). */
export interface Jwk {
  kid?: string;
  kty?: string;
  crv?: string;
  x?: string;
  y?: string;
  use?: string;
  alg?: string;
  key_ops?: string[];
}

const failure = (code: SignatureFailure['code'], message: string) => err<SignatureFailure>({ code, message });

/**
 * Verifies a signed request (UCP's REST request verification): one signature of `Signature-Input`
 * must verify with a key of `keys`, cover the target, the body (with a matching digest) and the
 * UCP headers present, and not be expired. Answers the verifying key's id, or why none verified
 * (the first signature's reason when there are several).
 */
export function verifyRequest(
  request: RequestParts & { body: Buffer | undefined },
  keys: readonly Jwk[],
  now: Date,
): Result<{ keyid: string }, SignatureFailure> {
  const inputs = dictionary(request.header('signature-input'));
  const signatures = dictionary(request.header('signature'));
  if (!inputs || !signatures || inputs.size === 0) {
    return failure(
      'signature_invalid',
      'Signature-Input and Signature must be RFC 9421 dictionaries of one or more signatures.',
    );
  }
  let first: SignatureFailure | undefined;
  for (const [label, member] of inputs) {
    const outcome = verifyOne(request, keys, now, member, signatures.get(label));
    if (outcome.ok) return outcome;
    first ??= outcome.error;
  }
  return err(first as SignatureFailure);
}

function dictionary(header: string | undefined): Dictionary | undefined {
  if (header === undefined) return undefined;
  try {
    return parseDictionary(header);
  } catch (error) {
    if (error instanceof ParseError) return undefined;
    throw error;
  }
}

function requiredComponents(request: RequestParts & { body: Buffer | undefined }): string[] {
  const required = ['@method', '@authority', '@path'];
  if (request.query !== '') required.push('@query');
  if (request.body !== undefined && request.body.length > 0) required.push('content-digest', 'content-type');
  for (const header of ['idempotency-key', 'ucp-agent', 'signature-agent']) {
    if (request.header(header) !== undefined) required.push(header);
  }
  return required;
}

function verifyOne(
  request: RequestParts & { body: Buffer | undefined },
  keys: readonly Jwk[],
  now: Date,
  input: InnerList | [BareItem, Map<string, BareItem>],
  signature: Dictionary extends Map<string, infer V> ? V | undefined : never,
): Result<{ keyid: string }, SignatureFailure> {
  if (!isInnerList(input) || input[0].some(([name, params]) => typeof name !== 'string' || params.size > 0)) {
    return failure('signature_invalid', 'Each signature must cover a list of plain component names.');
  }
  const components = input[0].map(([name]) => name as string);
  const params = input[1];
  const keyid = params.get('keyid');
  if (typeof keyid !== 'string') return failure('signature_invalid', 'The signature names no keyid.');
  const bytes = signature && !isInnerList(signature) ? signature[0] : undefined;
  if (!(bytes instanceof ArrayBuffer)) {
    return failure('signature_invalid', 'The Signature header has no byte sequence for this signature.');
  }

  const jwk = keys.find(
    (key) => key.kid === keyid && key.use !== 'enc' && (key.key_ops?.includes('verify') ?? true),
  );
  if (!jwk)
    return failure('key_not_found', `No published key of the signer has the kid ${JSON.stringify(keyid)}.`);
  const alg = params.get('alg');
  const publicKey = es256Key(jwk);
  if (!publicKey || (alg !== undefined && alg !== 'ecdsa-p256-sha256')) {
    return failure(
      'algorithm_unsupported',
      'Only ES256 (ECDSA P-256 with SHA-256) signatures are verified here.',
    );
  }

  const missing = requiredComponents(request).filter((name) => !components.includes(name));
  if (missing.length > 0) {
    return failure('signature_invalid', `The signature does not cover ${missing.join(', ')}.`);
  }
  const nowS = Math.floor(now.getTime() / 1000);
  const expires = params.get('expires');
  if (expires !== undefined && (typeof expires !== 'number' || expires <= nowS)) {
    return failure('signature_invalid', 'The signature has expired.');
  }
  const created = params.get('created');
  if (created !== undefined && (typeof created !== 'number' || created > nowS + CLOCK_SKEW_S)) {
    return failure('signature_invalid', 'The signature was created in the future.');
  }
  if (
    components.includes('content-digest') &&
    !digestMatches(request.header('content-digest'), request.body ?? Buffer.alloc(0))
  ) {
    return failure('digest_mismatch', 'Content-Digest does not match the SHA-256 of the body as received.');
  }

  const signatureParamsText = serializeInnerList(input);
  const base = signatureBase(components, signatureParamsText, (name) => requestComponent(name, request));
  if (!base.ok)
    return failure('signature_invalid', `The signature covers ${base.error}, which the request lacks.`);
  const valid = verify(
    'sha256',
    Buffer.from(base.value),
    { key: publicKey, dsaEncoding: 'ieee-p1363' },
    Buffer.from(bytes),
  );
  return valid ? ok({ keyid }) : failure('signature_invalid', 'The signature does not verify.');
}

function es256Key(jwk: Jwk): KeyObject | undefined {
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || (jwk.alg !== undefined && jwk.alg !== 'ES256'))
    return undefined;
  if (typeof jwk.x !== 'string' || typeof jwk.y !== 'string') return undefined;
  try {
    return createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y }, format: 'jwk' });
  } catch {
    return undefined;
  }
}

/** The `sha-256` member of Content-Digest equals the body's SHA-256 (other algorithms are ignored). */
function digestMatches(header: string | undefined, body: Buffer): boolean {
  const member = dictionary(header)?.get('sha-256');
  const claimed = member && !isInnerList(member) ? member[0] : undefined;
  if (!(claimed instanceof ArrayBuffer)) return false;
  const actual = createHash('sha256').update(body).digest();
  const given = Buffer.from(claimed);
  return given.length === actual.length && timingSafeEqual(given, actual);
}
