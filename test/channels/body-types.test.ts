// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testDialect } from '../helpers/database.ts';
import { BUYER, readProblem, startMppFixture } from '../helpers/mpp.ts';
import { startPurchaseFixture } from '../helpers/purchase.ts';
import { createBody, expectError, expectSession, injectingClient } from './acp-client.ts';

describe(`JSON bodies are taken as sent, on ${testDialect}: a value of the wrong type is refused, never converted`, () => {
  it('ACP refuses a quantity given as text or a boolean, and an empty string for the buyer', async (t) => {
    const { runtime } = await startPurchaseFixture(t);
    const acp = injectingClient(runtime.app);
    for (const quantity of ['1', true]) {
      const body = { ...createBody('svc-pro-monthly'), line_items: [{ id: 'svc-pro-monthly', quantity }] };
      const error = expectError(await acp.create(body), 400, 'invalid', '$.line_items[0].quantity');
      assert.equal(error.message, '$.line_items[0].quantity must be integer.');
    }
    const sessions = await runtime.database.db.selectFrom('checkout_sessions').select('id').execute();
    assert.equal(sessions.length, 0);

    const session = expectSession(await acp.create(createBody('svc-pro-monthly', 'a@example.com')), 201);
    expectError(await acp.update(session.id, { buyer: '' }), 400, 'invalid', '$.buyer');
    const unchanged = expectSession(await acp.get(session.id));
    assert.equal(unchanged.buyer?.email, 'a@example.com');
  });

  it('ACP and MPP take an optional field sent as null as left out, as clients that write unset fields do', async (t) => {
    const fixture = await startMppFixture(t);
    const acp = injectingClient(fixture.runtime.app);
    const buyer = { email: 'a@example.com', first_name: null, last_name: null, phone_number: null };
    const body = {
      ...createBody('svc-pro-monthly'),
      buyer,
      line_items: [{ id: 'svc-pro-monthly', quantity: null }],
    };
    const session = expectSession(await acp.create(body), 201);
    assert.equal(session.buyer?.email, 'a@example.com');
    assert.equal(session.buyer?.first_name, undefined);

    const response = await fixture.buy('svc-pro-monthly', {
      body: { buyer: { ...BUYER.buyer, first_name: null, phone_number: null } },
    });
    assert.equal(response.status, 402, 'on to the payment challenge');
  });

  it('MPP refuses a buyer name given as a number, naming the field in the problem', async (t) => {
    const fixture = await startMppFixture(t);
    const response = await fixture.buy('svc-pro-monthly', {
      body: { buyer: { ...BUYER.buyer, full_name: 42 } },
    });
    assert.equal(response.status, 400);
    const problem = await readProblem(response);
    assert.equal(problem.code, 'invalid_request');
    assert.deepEqual(problem.errors, [{ path: 'body/buyer/full_name', message: 'must be string' }]);
  });
});
