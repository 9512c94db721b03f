// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testDialect } from '../helpers/database.ts';
import { startPurchaseFixture } from '../helpers/purchase.ts';
import { completeBody, createBody, expectSession, injectingClient } from './acp-client.ts';

describe(`ACP fields of the unreleased spec on ${testDialect}: accepted, never a failure`, () => {
  it('buys with suggested_price on the item, fulfillment_details on complete and enum values it does not know', async (t) => {
    const { runtime, mintToken } = await startPurchaseFixture(t);
    const acp = injectingClient(runtime.app);
    const create = createBody('svc-pro-monthly', 'a@example.com');
    const session = expectSession(
      await acp.create(
        {
          ...create,
          line_items: [
            {
              id: 'svc-pro-monthly',
              suggested_price: {
                amount: 1,
                source: { feed_id: 'feed_1', channel: 'a-channel-from-the-future' },
                observed_at: '2026-11-01T00:00:00Z',
              },
            },
          ],
          capabilities: { interventions: { supported: ['3ds', 'a_future_intervention'] } },
          locale: 'en-US',
        },
        {},
      ),
      201,
    );
    assert.equal(
      session.line_items[0]?.totals.find((total) => total.type === 'total')?.amount,
      29900,
      'our price, not the suggestion',
    );
    const completed = expectSession(
      await acp.complete(session.id, {
        ...completeBody(await mintToken()),
        fulfillment_details: { name: 'Ada', email: 'a@example.com', phone_number: '+15555550100' },
        risk_signals: { ip_address: '192.0.2.1' },
        marketing_consents: [{ channel: 'carrier_pigeon', opted_in: false }],
      }),
    );
    assert.equal(completed.status, 'completed');
  });
});
