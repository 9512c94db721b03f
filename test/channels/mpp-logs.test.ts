// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { Failpoints } from '../../src/purchase/index.ts';
import { testDialect } from '../helpers/database.ts';
import { encodeCredential, payingCredential } from '../helpers/mpp.ts';
import { startPurchaseFixture } from '../helpers/purchase.ts';

const failProvisioningOnce = (): Failpoints => {
  let armed = true;
  return {
    async hit(name) {
      if (armed && name === 'before_provisioning_commit') {
        armed = false;
        throw new Error('provisioning hiccup');
      }
    },
  };
};

/** A service whose log lines are captured, paying through the sandbox; provisioning fails once. */
async function startLoggedService(t: TestContext) {
  const fixture = await startPurchaseFixture(t, {
    captureLogs: true,
    maxNetworkRetries: 0,
    failpoints: failProvisioningOnce(),
  });
  const url = await fixture.runtime.app.listen({ host: '127.0.0.1', port: 0 });
  const buy = (authorization?: string) =>
    fetch(`${url}/api/mpp/plans/svc-pro-monthly`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
      body: JSON.stringify({ buyer: { email: 'buyer@example.com' } }),
    });
  return {
    lines: fixture.logs,
    sandbox: fixture.sandbox,
    clock: fixture.clock,
    buy,
    mint: (paymentMethod?: string) => fixture.mintToken({ paymentMethod }),
  };
}

describe(`MPP logging on ${testDialect}`, () => {
  it('never logs a shared payment token or a credential, whatever happens to the payment', async (t) => {
    const service = await startLoggedService(t);
    const secrets: string[] = [];
    const pay = async (paymentMethod?: string, beforePaying = () => {}) => {
      const spt = await service.mint(paymentMethod);
      const authorization = payingCredential(await service.buy(), spt);
      secrets.push(spt, authorization.slice('Payment '.length));
      beforePaying();
      return { authorization, response: await service.buy(authorization) };
    };

    assert.equal((await pay('pm_card_visa_chargeDeclined')).response.status, 402);
    assert.equal((await pay('pm_card_authenticationRequired')).response.status, 402);
    const unknown = await pay(undefined, () => service.sandbox.faults.failNext(1, 500));
    assert.equal(unknown.response.status, 503);
    const unfinished = await service.buy(unknown.authorization);
    assert.equal(unfinished.status, 503, 'provisioning fails once');
    assert.equal((await service.buy(unknown.authorization)).status, 200);
    const garbage = encodeCredential({ challenge: { id: 'x' }, payload: { spt: 'spt_garbage_secret' } });
    secrets.push('spt_garbage_secret', garbage.slice('Payment '.length));
    assert.equal((await service.buy(garbage)).status, 402);

    assert.ok(service.lines.some((line) => line.includes('request completed')));
    assert.ok(service.lines.some((line) => line.includes('provisioning failed')));
    const all = service.lines.join('\n');
    for (const secret of secrets) assert.equal(all.includes(secret), false, 'a secret reached the logs');
    assert.doesNotMatch(all, /spt_/);
  });
});
