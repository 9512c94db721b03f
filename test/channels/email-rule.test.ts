// db-scope: both

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { DELIVERABLE_ADDRESSES, UNDELIVERABLE_ADDRESSES } from '../fixtures/email-addresses.ts';
import { createOrganizationIn } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';
import { startMppFixture } from '../helpers/mpp.ts';

const UCP_AGENT = 'profile="https://agent.example/.well-known/ucp"; version="2026-08-25"';

describe(`one email rule on every surface on ${testDialect}`, () => {
  it('ACP, UCP, MPP and REST people accept and refuse the same addresses', async (t) => {
    const fixture = await startMppFixture(t);
    const org = await createOrganizationIn(fixture.runtime);
    const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
      const response = await fetch(`${fixture.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID(), ...headers },
        body: JSON.stringify(body),
      });
      await response.body?.cancel();
      return response.status;
    };
    /** Whether each surface took the address: the status it answers when it does. */
    const surfaces: [string, (email: string) => Promise<number>, number][] = [
      [
        'ACP checkout buyer',
        (email) =>
          post('/api/acp/checkout_sessions', {
            line_items: [{ id: 'svc-pro-monthly' }],
            currency: 'usd',
            buyer: { email },
          }),
        201,
      ],
      [
        'UCP checkout buyer',
        (email) =>
          post(
            '/api/ucp/v1/checkout-sessions',
            { line_items: [{ item: { id: 'svc-pro-monthly' }, quantity: 1 }], buyer: { email } },
            { 'ucp-agent': UCP_AGENT },
          ),
        201,
      ],
      // Without a credential an accepted body is answered with the payment challenge.
      ['MPP buyer', (email) => post('/api/mpp/plans/svc-pro-monthly', { buyer: { email } }), 402],
      [
        'REST person',
        (email) => post('/api/v1/people', { email, name: 'Someone' }, { authorization: `Bearer ${org.key}` }),
        201,
      ],
    ];
    for (const [surface, send, accepted] of surfaces) {
      for (const email of DELIVERABLE_ADDRESSES)
        assert.equal(await send(email), accepted, `${surface}: ${email}`);
      for (const email of UNDELIVERABLE_ADDRESSES)
        assert.equal(await send(email), 400, `${surface}: ${JSON.stringify(email)}`);
    }
    assert.equal((await fixture.counts()).paymentIntents, 0);
  });
});
