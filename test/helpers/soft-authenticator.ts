import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';

/**
 * A software WebAuthn authenticator (ES256, "none" attestation) for HTTP-level tests: it answers
 * the options the service hands out with what a browser would post, and can be told to sign for
 * another origin or RP ID, or with any signature counter, to test what the service refuses.
 */
export class SoftAuthenticator {
  readonly credentialId = randomBytes(16);
  readonly #privateKey: KeyObject;
  readonly #publicKey: KeyObject;
  #userHandle = '';
  counter = 0;

  constructor() {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.#privateKey = pair.privateKey;
    this.#publicKey = pair.publicKey;
  }

  get id(): string {
    return this.credentialId.toString('base64url');
  }

  /** The registration response to `generateRegistrationOptions` output, as JSON text. */
  register(
    options: { challenge: string; rp: { id?: string }; user: { id: string } },
    origin: string,
    overrides: { rpId?: string } = {},
  ): string {
    this.#userHandle = options.user.id;
    const jwk = this.#publicKey.export({ format: 'jwk' });
    const coseKey = new Map<number, unknown>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, Buffer.from(jwk.x ?? '', 'base64url')],
      [-3, Buffer.from(jwk.y ?? '', 'base64url')],
    ]);
    const credentialIdLength = Buffer.alloc(2);
    credentialIdLength.writeUInt16BE(this.credentialId.length);
    const authData = Buffer.concat([
      this.#authenticatorData(overrides.rpId ?? options.rp.id ?? '', 0x45),
      Buffer.alloc(16),
      credentialIdLength,
      this.credentialId,
      encodeCbor(coseKey),
    ]);
    const attestationObject = encodeCbor(
      new Map<string, unknown>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]),
    );
    return JSON.stringify({
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: {
        clientDataJSON: clientData('webauthn.create', options.challenge, origin),
        attestationObject: attestationObject.toString('base64url'),
        transports: ['internal'],
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    });
  }

  /** The assertion answering `generateAuthenticationOptions` output, as JSON text; the counter grows by one. */
  assert(
    options: { challenge: string; rpId?: string },
    origin: string,
    overrides: { rpId?: string; counter?: number } = {},
  ): string {
    this.counter = overrides.counter ?? this.counter + 1;
    const authenticatorData = this.#authenticatorData(overrides.rpId ?? options.rpId ?? '', 0x05);
    const clientDataJSON = clientData('webauthn.get', options.challenge, origin);
    const signature = sign(
      'sha256',
      Buffer.concat([
        authenticatorData,
        createHash('sha256').update(Buffer.from(clientDataJSON, 'base64url')).digest(),
      ]),
      this.#privateKey,
    );
    return JSON.stringify({
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: {
        clientDataJSON,
        authenticatorData: authenticatorData.toString('base64url'),
        signature: signature.toString('base64url'),
        userHandle: this.#userHandle,
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    });
  }

  /** RP ID hash, flags (user present 0x01, verified 0x04, attested credential data 0x40), counter. */
  #authenticatorData(rpId: string, flags: number): Buffer {
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(this.counter);
    return Buffer.concat([createHash('sha256').update(rpId).digest(), Buffer.from([flags]), counter]);
  }
}

function clientData(type: string, challenge: string, origin: string): string {
  return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false })).toString('base64url');
}

/** Just enough CBOR (RFC 8949) for attestation objects: integers, byte and text strings, maps. */
function encodeCbor(value: unknown): Buffer {
  if (typeof value === 'number') {
    return value >= 0 ? head(0, value) : head(1, -1 - value);
  }
  if (Buffer.isBuffer(value)) return Buffer.concat([head(2, value.length), value]);
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (value instanceof Map) {
    const parts = [head(5, value.size)];
    for (const [key, item] of value) parts.push(encodeCbor(key), encodeCbor(item));
    return Buffer.concat(parts);
  }
  throw new TypeError(`cannot encode ${typeof value}`);
}

function head(major: number, length: number): Buffer {
  if (length < 24) return Buffer.from([(major << 5) | length]);
  if (length < 256) return Buffer.from([(major << 5) | 24, length]);
  const bytes = Buffer.alloc(3);
  bytes[0] = (major << 5) | 25;
  bytes.writeUInt16BE(length, 1);
  return bytes;
}
