// db-scope: both

import assert from 'node:assert/strict';
import { createHash, createPublicKey, generateKeyPairSync, type JsonWebKey, randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createSigner, createVerifier, httpbis } from 'http-message-signatures';
import { registerPlatform } from '../../src/channels/ucp/index.ts';
import { DAY_MS, ManualClock } from '../../src/shared/clock.ts';
import { startTestRuntime } from '../helpers/runtime.ts';
import { assertUcpBusinessProfile } from '../helpers/ucp-schema.ts';

const PLATFORM = 'https://platform.example/.well-known/ucp';
const AGENT = `profile="${PLATFORM}"; version="2026-08-25"`;
const HOST = 'svc.test';
const SESSIONS = '/api/ucp/v1/checkout-sessions';

/** A platform's ES256 key pair, its public half as its profile would publish it. */
function platformKey(kid: string) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { kid, privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'ES256' } };
}

const digestOf = (body: string) => `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
const createBody = JSON.stringify({
  line_items: [{ item: { id: 'svc-pro-monthly' }, quantity: 1 }],
  buyer: { email: 'signed.buyer@example.com' },
});

interface Signed {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** A request signed by the independent library, as UCP's signatures.md describes it. */
async function signedRequest(
  key: ReturnType<typeof platformKey>,
  body: string,
  options: { expires?: Date; fields?: string[] } = {},
): Promise<Signed> {
  const request = {
    method: 'POST',
    url: `https://${HOST}${SESSIONS}`,
    headers: {
      host: HOST,
      'content-type': 'application/json',
      'ucp-agent': AGENT,
      'idempotency-key': randomUUID(),
      'content-digest': digestOf(body),
    } as Record<string, string>,
  };
  const signed = await httpbis.signMessage(
    {
      key: createSigner(key.privateKey, 'ecdsa-p256-sha256', key.kid),
      fields: options.fields ?? [
        '@method',
        '@authority',
        '@path',
        'ucp-agent',
        'idempotency-key',
        'content-digest',
        'content-type',
      ],
      params: options.expires ? ['created', 'expires', 'keyid'] : ['created', 'keyid'],
      paramValues: options.expires ? { expires: options.expires } : {},
    },
    request,
  );
  return { ...request, headers: signed.headers as Record<string, string>, body };
}

async function send(app: FastifyInstance, request: Signed) {
  const res = await app.inject({
    method: 'POST',
    url: SESSIONS,
    headers: request.headers,
    payload: request.body,
  });
  return {
    status: res.statusCode,
    headers: res.headers,
    body: res.json() as { status?: string; messages?: { code: string }[] },
  };
}

/** Verifies a response of ours with the library and the key our profile publishes. */
async function verifyResponse(
  app: FastifyInstance,
  response: { statusCode: number; headers: Record<string, unknown>; body: string },
): Promise<string> {
  const profile = (await app.inject({ method: 'GET', url: '/.well-known/ucp' })).json() as {
    keys: { kid: string }[];
  };
  assert.equal(response.headers['content-digest'], digestOf(response.body));
  let usedKid = '';
  const verified = await httpbis.verifyMessage(
    {
      keyLookup: async (params) => {
        const jwk = profile.keys.find((key) => key.kid === params.keyid);
        if (!jwk) return null;
        usedKid = jwk.kid;
        return {
          id: jwk.kid,
          algs: ['ecdsa-p256-sha256'],
          verify: createVerifier(
            createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' }),
            'ecdsa-p256-sha256',
          ),
        };
      },
      requiredFields: ['@status', 'content-digest', 'content-type'],
    },
    { status: response.statusCode, headers: response.headers as Record<string, string> },
  );
  assert.equal(verified, true);
  return usedKid;
}

describe('UCP message signatures (RFC 9421)', () => {
  it('publishes ES256 keys in the profile, valid against the official profile schema', async (t) => {
    const runtime = await startTestRuntime(t);
    const profile = (await runtime.app.inject({ method: 'GET', url: '/.well-known/ucp' })).json();
    assertUcpBusinessProfile(profile);
    assert.equal(profile.keys.length, 1);
    assert.deepEqual(Object.keys(profile.keys[0]).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    assert.equal(profile.keys[0].alg, 'ES256');
    assert.equal(profile.keys[0].crv, 'P-256');
  });

  it('accepts a signed request of a registered platform and signs its response', async (t) => {
    const runtime = await startTestRuntime(t);
    const key = platformKey('platform-2026');
    await registerPlatform(runtime.database.db, { profileUrl: PLATFORM, keys: [key.jwk] }, new Date());
    const request = await signedRequest(key, createBody);
    const res = await runtime.app.inject({
      method: 'POST',
      url: SESSIONS,
      headers: request.headers,
      payload: request.body,
    });
    assert.equal(res.statusCode, 201, res.body);
    await verifyResponse(runtime.app, res);
  });

  it('refuses a tampered body, a re-digested one, an expired signature, an unknown signer and an uncovered header', async (t) => {
    const runtime = await startTestRuntime(t);
    const key = platformKey('platform-2026');
    await registerPlatform(runtime.database.db, { profileUrl: PLATFORM, keys: [key.jwk] }, new Date());
    const tampered = createBody.replace('svc-pro-monthly', 'svc-starter-monthly');

    const changed = await signedRequest(key, createBody);
    const mismatch = await send(runtime.app, { ...changed, body: tampered });
    assert.equal(mismatch.status, 400);
    assert.equal(mismatch.body.messages?.[0]?.code, 'digest_mismatch');

    const redigested = await signedRequest(key, createBody);
    const forged = await send(runtime.app, {
      ...redigested,
      headers: { ...redigested.headers, 'content-digest': digestOf(tampered) },
      body: tampered,
    });
    assert.equal(forged.status, 401);
    assert.equal(forged.body.messages?.[0]?.code, 'signature_invalid');
    assert.equal(forged.headers['www-authenticate'], 'Signature');

    const expired = await send(
      runtime.app,
      await signedRequest(key, createBody, { expires: new Date(Date.now() - 1000) }),
    );
    assert.equal(expired.status, 401);
    assert.equal(expired.body.messages?.[0]?.code, 'signature_invalid');

    const stranger = platformKey('stranger');
    const unknown = await send(runtime.app, await signedRequest(stranger, createBody));
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body.messages?.[0]?.code, 'key_not_found');

    const uncovered = await send(
      runtime.app,
      await signedRequest(key, createBody, {
        fields: ['@method', '@authority', '@path', 'content-digest', 'content-type'],
      }),
    );
    assert.equal(uncovered.status, 401);
    assert.equal(uncovered.body.messages?.[0]?.code, 'signature_invalid');

    const rows = await runtime.database.db.selectFrom('checkout_sessions').select('id').execute();
    assert.equal(rows.length, 0, 'no refused request created a checkout');
  });

  it('serves unsigned requests, unless the operator requires signatures', async (t) => {
    const open = await startTestRuntime(t);
    const headers = {
      'content-type': 'application/json',
      'ucp-agent': AGENT,
      'idempotency-key': randomUUID(),
    };
    const unsigned = await open.app.inject({ method: 'POST', url: SESSIONS, headers, payload: createBody });
    assert.equal(unsigned.statusCode, 201);

    const strict = await startTestRuntime(t, { env: { UCP_REQUIRE_SIGNATURES: 'true' } });
    const refused = await strict.app.inject({ method: 'POST', url: SESSIONS, headers, payload: createBody });
    assert.equal(refused.statusCode, 401);
    assert.equal(refused.json().messages[0].code, 'signature_missing');
  });

  it('rotates keys with an overlap: the new key signs, the old one stays published until its grace ends', async (t) => {
    const clock = new ManualClock(new Date());
    const runtime = await startTestRuntime(t, { clock });
    const profileKids = async () =>
      (
        (await runtime.app.inject({ method: 'GET', url: '/.well-known/ucp' })).json() as {
          keys: { kid: string }[];
        }
      ).keys.map((key) => key.kid);
    const read = () =>
      runtime.app.inject({ method: 'GET', url: `${SESSIONS}/cs_unknown`, headers: { 'ucp-agent': AGENT } });
    const first = await verifyResponse(runtime.app, await read());
    assert.deepEqual(await profileKids(), [first]);

    // The profile lists the newest key first; a rotation comes later than the first key.
    clock.advance(60_000);
    const { kid: second, retired } = await runtime.signingKeys.rotate(7 * DAY_MS);
    assert.deepEqual(retired, [first]);
    assert.deepEqual(await profileKids(), [second, first]);
    assert.equal(await verifyResponse(runtime.app, await read()), second);

    clock.advance(7 * DAY_MS - 1);
    assert.deepEqual(await profileKids(), [second, first]);
    clock.advance(1);
    assert.deepEqual(await profileKids(), [second]);
  });
});
