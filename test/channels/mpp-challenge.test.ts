// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Challenge } from 'mppx';
import { findSellableItem } from '../../src/catalog/index.ts';
import {
  base64urlJcs,
  challengeId,
  formatChallenge,
  issueChallenge,
  paidRouteFor,
} from '../../src/channels/mpp/challenge.ts';
import { readCredential, sharedPaymentToken, verifyChallenge } from '../../src/channels/mpp/credential.ts';
import { challengeParams, decodeBase64urlJson, encodeCredential } from '../helpers/mpp.ts';

const VECTOR_SECRET = 'test-vector-secret-minimum-32-byte-secret';
const tempo = { realm: 'api.example.com', method: 'tempo', intent: 'charge' };

/** tempoxyz/mpp-tools conformance/vectors/challenge-id.json, as quoted in reference/mpp.md. */
const CONFORMANCE_VECTORS = [
  {
    name: 'required fields only',
    secret: VECTOR_SECRET,
    slots: { ...tempo, request: { amount: '1000000' } },
    expected: '6QDs0BmhrI_v67iWeCMvGqQJEFQ6ErWKlk7zi5xL6t0',
  },
  {
    name: 'with expires',
    secret: VECTOR_SECRET,
    slots: { ...tempo, request: { amount: '1000000' }, expires: '2025-01-06T12:00:00Z' },
    expected: 'ZcHgfEi5_Qyda9NQwUzamsCgCcWXw6N6EH2NLyaSTlg',
  },
  {
    name: 'with digest',
    secret: VECTOR_SECRET,
    slots: {
      ...tempo,
      request: { amount: '1000000' },
      digest: 'sha-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE',
    },
    expected: 'vwnOtW2kwdujK9_uC_taI2e6Jwq86Jwogvq9m--i8eQ',
  },
  {
    name: 'with opaque',
    secret: VECTOR_SECRET,
    slots: { ...tempo, request: { amount: '1000000' }, opaque: 'trace-123' },
    expected: '1XJ-Ti0DACNe3E1zHvwH6OdnKlhUx6xKxDbhJyexng4',
  },
  {
    name: 'another method',
    secret: VECTOR_SECRET,
    slots: { ...tempo, method: 'stripe', request: { amount: '1000000' } },
    expected: 'IPY59YD2ZWmf3yXnZxbQgYoYejrVB9Nh_rpSkrOeSG0',
  },
  {
    name: 'HTML-sensitive characters stay unescaped',
    secret: VECTOR_SECRET,
    slots: {
      ...tempo,
      request: {
        amount: '1500',
        currency: 'USD',
        description: 'Access <premium> & analytics',
        recipient: 'merchant',
      },
    },
    expected: 'iU2QdYw_u-prmGZWxm58jeBakeYE-ib_u77f9vcW76E',
  },
  {
    name: 'unicode in the request',
    secret: 'unicode-test-key-minimum-32-byte-secret',
    slots: {
      ...tempo,
      request: {
        amount: '100',
        currency: 'EUR',
        recipient: `0x${'1'.repeat(40)}`,
        description: 'Payment for café ☕',
      },
    },
    expected: '-UB9jxfPEvTmFw7qvLmqJhDZ-lJ-noCp15ROxPHC4BE',
  },
];

/** Our golden vector from reference/mpp.md §1 (generated with mppx 0.11.0). */
const GOLDEN = {
  secret: 'test-secret-key-test-secret-key-32-bytes!!',
  request: {
    amount: '100',
    currency: 'usd',
    methodDetails: { networkId: 'profile_test123', paymentMethodTypes: ['card'] },
  },
  requestB64:
    'eyJhbW91bnQiOiIxMDAiLCJjdXJyZW5jeSI6InVzZCIsIm1ldGhvZERldGFpbHMiOnsibmV0d29ya0lkIjoicHJvZmlsZV90ZXN0MTIzIiwicGF5bWVudE1ldGhvZFR5cGVzIjpbImNhcmQiXX19',
  expires: '2030-01-01T00:15:00.000Z',
};

const proMonthly = (() => {
  const found = findSellableItem('svc-pro-monthly');
  if (!found.ok) throw new Error('catalog lost svc-pro-monthly');
  return found.value;
})();
const route = paidRouteFor(proMonthly, { realm: 'svc.test', networkId: 'profile_test_sandbox' });
const SECRET = 'a-test-secret-of-at-least-32-bytes-long';
const NOW = new Date('2026-03-01T12:00:00.000Z');

describe('MPP challenge id', () => {
  for (const vector of CONFORMANCE_VECTORS) {
    it(`matches the conformance vector: ${vector.name}`, () => {
      const { request, ...slots } = vector.slots;
      assert.equal(challengeId(vector.secret, { ...slots, request: base64urlJcs(request) }), vector.expected);
    });
  }

  it('matches the golden psp and stripe vectors, request encoding included', () => {
    assert.equal(base64urlJcs(GOLDEN.request), GOLDEN.requestB64);
    const slots = {
      realm: 'api.example.com',
      intent: 'charge',
      request: GOLDEN.requestB64,
      expires: GOLDEN.expires,
    };
    assert.equal(
      challengeId(GOLDEN.secret, { ...slots, method: 'psp' }),
      '96AtXgcOS9WZ0EtFdKEYwO7G0J_ipXqku7iCpWOOq94',
    );
    assert.equal(
      challengeId(GOLDEN.secret, { ...slots, method: 'stripe' }),
      '41TNuP6hhwxDy8lB4WAl_Y7ODxwhMEcdaaD9oE4Cp2s',
    );
  });

  it('formats the golden header exactly as the reference SDK does', () => {
    const challenge = {
      id: '96AtXgcOS9WZ0EtFdKEYwO7G0J_ipXqku7iCpWOOq94',
      realm: 'api.example.com',
      method: 'psp',
      intent: 'charge',
      request: GOLDEN.requestB64,
      description: 'Fortune',
      expires: GOLDEN.expires,
    };
    assert.equal(
      formatChallenge(challenge),
      `Payment id="96AtXgcOS9WZ0EtFdKEYwO7G0J_ipXqku7iCpWOOq94", realm="api.example.com", method="psp", intent="charge", request="${GOLDEN.requestB64}", description="Fortune", expires="2030-01-01T00:15:00.000Z"`,
    );
  });
});

describe('MPP challenge header', () => {
  it('carries the item price in cents, usd and the network profile, expiring in 15 minutes', () => {
    const challenge = issueChallenge(route, SECRET, NOW);
    const params = challengeParams(formatChallenge(challenge));
    assert.deepEqual(Object.keys(params), [
      'id',
      'realm',
      'method',
      'intent',
      'request',
      'description',
      'expires',
      'opaque',
    ]);
    assert.deepEqual(decodeBase64urlJson(params.request ?? ''), {
      amount: '29900',
      currency: 'usd',
      methodDetails: { networkId: 'profile_test_sandbox', paymentMethodTypes: ['card'] },
    });
    assert.equal(params.expires, '2026-03-01T12:15:00.000Z');
    assert.doesNotMatch(params.request ?? '', /=/);
  });

  it('is unique even when issued in the same millisecond, through a flat opaque nonce', () => {
    const [a, b] = [issueChallenge(route, SECRET, NOW), issueChallenge(route, SECRET, NOW)];
    assert.notEqual(a.id, b.id);
    const opaque = decodeBase64urlJson(a.opaque ?? '');
    assert.deepEqual(Object.keys(opaque), ['nonce']);
    assert.equal(typeof opaque.nonce, 'string');
  });

  it("round-trips through mppx's parser, which verifies our id with the same secret", () => {
    const header = formatChallenge(issueChallenge(route, SECRET, NOW));
    const parsed = Challenge.deserialize(header);
    assert.equal(parsed.method, 'psp');
    assert.equal(parsed.intent, 'charge');
    assert.equal(parsed.realm, 'svc.test');
    assert.equal(parsed.expires, '2026-03-01T12:15:00.000Z');
    assert.deepEqual(parsed.request, decodeBase64urlJson(challengeParams(header).request ?? ''));
    assert.equal(Challenge.verify(parsed, { secretKey: SECRET }), true);
    assert.equal(Challenge.verify(parsed, { secretKey: `${SECRET}-other` }), false);
  });

  it('escapes quotes, backslashes and non-ASCII in quoted strings', () => {
    const challenge = { ...issueChallenge(route, SECRET, NOW), description: 'say "hi" \\ café — ok' };
    const header = formatChallenge(challenge);
    assert.match(header, /description="say \\"hi\\" \\\\ caf\\u00e9 \\u2014 ok"/);
    assert.equal(Challenge.deserialize(header).id, challenge.id);
  });
});

describe('MPP credential', () => {
  const challenge = issueChallenge(route, SECRET, NOW);
  const echo = { ...challenge };
  const credential = { challenge: echo, payload: { spt: 'spt_123' } };

  it('reads a Payment credential, padded or not, in either base64 alphabet', () => {
    const encoded = Buffer.from(JSON.stringify(credential)).toString('base64');
    assert.equal(readCredential(encodeCredential(credential)).kind, 'present');
    assert.equal(readCredential(`payment ${encoded}`).kind, 'present');
  });

  it('treats no header or another scheme as no credential, and garbage as malformed', () => {
    assert.equal(readCredential(undefined).kind, 'absent');
    assert.equal(readCredential('Bearer svc_live_x').kind, 'absent');
    for (const garbage of [
      'Payment',
      'Payment dGhpcyBpcyBnYXJiYWdl',
      'Payment !!!',
      'Payment a b',
      encodeCredential({ challenge: { id: 'x' }, payload: {} }),
      encodeCredential({ challenge: echo }),
      encodeCredential([1, 2]),
    ]) {
      assert.equal(readCredential(garbage).kind, 'malformed', garbage);
    }
  });

  it('verifies the echo: ours, for this route, with an expiry', () => {
    const ok = verifyChallenge(echo, route, SECRET);
    assert.deepEqual(ok, { ok: true, challengeId: challenge.id, expiresAt: new Date(challenge.expires) });
    const refusals = [
      verifyChallenge(echo, route, `${SECRET}-rotated`),
      verifyChallenge({ ...echo, request: base64urlJcs({ amount: '1', currency: 'usd' }) }, route, SECRET),
      verifyChallenge({ ...echo, expires: undefined }, route, SECRET),
      verifyChallenge({ ...echo, realm: 'evil.test' }, route, SECRET),
    ];
    for (const refusal of refusals) assert.equal(refusal.ok, false);
  });

  it('rejects a genuine challenge of another item on this route', () => {
    const found = findSellableItem('svc-starter-monthly');
    assert.ok(found.ok);
    const cheap = paidRouteFor(found.value, { realm: 'svc.test', networkId: 'profile_test_sandbox' });
    const cheapEcho = issueChallenge(cheap, SECRET, NOW);
    assert.deepEqual(verifyChallenge(cheapEcho, route, SECRET), {
      ok: false,
      detail: 'This challenge was issued for another item or price.',
    });
  });

  it('reads the shared payment token from the psp payload', () => {
    assert.equal(sharedPaymentToken({ spt: 'spt_123' }), 'spt_123');
    assert.equal(sharedPaymentToken({ spt: 'spt_123', externalId: 'x' }), 'spt_123');
    for (const payload of [{}, { spt: '' }, { spt: 42 }, { spt: 'has space' }, { token: 'spt_1' }]) {
      assert.equal(sharedPaymentToken(payload), undefined);
    }
  });
});
