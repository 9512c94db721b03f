// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { main } from '../../scripts/agent/main.ts';
import { testDialect } from '../helpers/database.ts';
import { capturedIo, runNpmScript, startDeployment } from '../helpers/deployment.ts';

const ITEMS = [
  'svc-starter-monthly',
  'svc-starter-annual',
  'svc-pro-monthly',
  'svc-pro-annual',
  'svc-enterprise-monthly',
  'svc-enterprise-annual',
];
const PROTOCOLS = ['acp', 'ucp', 'mpp'];

describe(`the example agent on ${testDialect}`, () => {
  it('buys each of the six items on each protocol, printing each step and the order', async (t) => {
    const deployment = await startDeployment(t);
    for (const protocol of PROTOCOLS) {
      for (const item of ITEMS) {
        const { out, err, io } = capturedIo();
        const email = `${protocol}.${item}@example.com`;
        const argv = ['buy', '--protocol', protocol, '--item', item, '--email', email];
        const code = await main([...argv, '--base-url', deployment.baseUrl, ...deployment.pspFlags], io);
        assert.equal(code, 0, `${protocol} ${item}: ${err.join('\n')}`);
        const steps = out.map((line) => line.split(/\s+/)[1]);
        const expected =
          protocol === 'mpp'
            ? ['discovery', 'challenge', 'token', 'pay']
            : ['discovery', 'session', 'token', 'complete'];
        assert.deepEqual(steps.slice(0, 4), expected, out.join('\n'));
        const order = JSON.parse(out.at(-1)?.replace(/^order /, '') ?? '{}');
        const orderId = protocol === 'mpp' ? order.order_id : order.id;
        assert.match(orderId, /^ord_/, `${protocol} ${item} printed no order`);
      }
    }
    const counts = await deployment.counts();
    assert.deepEqual([counts.succeeded, counts.orders, counts.workspaces], [18, 18, 18]);
  });

  it('exits non-zero naming the failed step for an item no protocol sells, and buys nothing', async (t) => {
    const deployment = await startDeployment(t);
    for (const [protocol, step] of [
      ['acp', 'session'],
      ['ucp', 'session'],
      ['mpp', 'discovery'],
    ] as const) {
      const { err, io } = capturedIo();
      const argv = ['buy', '--protocol', protocol, '--item', 'svc-no-such-plan', '--email', 'a@example.com'];
      const code = await main([...argv, '--base-url', deployment.baseUrl, ...deployment.pspFlags], io);
      assert.equal(code, 1, protocol);
      assert.match(err.join('\n'), new RegExp(`^${protocol} ${step}\\s+FAILED: .*svc-no-such-plan`));
    }
    const counts = await deployment.counts();
    assert.deepEqual([counts.paymentIntents, counts.orders], [0, 0]);
  });

  it('exits non-zero when the payment is declined, and with a usage error for a missing flag', async (t) => {
    const deployment = await startDeployment(t);
    const declined = capturedIo();
    const argv = ['buy', '--protocol', 'acp', '--item', 'svc-pro-monthly', '--email', 'a@example.com'];
    const flags = ['--base-url', deployment.baseUrl, ...deployment.pspFlags];
    const code = await main(
      [...argv, ...flags, '--payment-method', 'pm_card_visa_chargeDeclined'],
      declined.io,
    );
    assert.equal(code, 1);
    assert.match(declined.err.join('\n'), /acp complete\s+FAILED: .*payment_declined/);
    const usage = capturedIo();
    assert.equal(await main(['buy', '--protocol', 'acp', ...flags], usage.io), 2);
    assert.match(usage.err.join('\n'), /--item and --email are required/);
    for (const ask of [['--help'], ['-h'], ['buy', '--help']]) {
      const help = capturedIo();
      assert.equal(await main(ask, help.io), 0, ask.join(' '));
      assert.deepEqual(help.err, [], 'asking for help is no error');
      assert.match(help.out.join('\n'), /^usage: npm run agent -- buy --protocol acp\|ucp\|mpp/);
    }
  });

  it('runs as `npm run agent` and pays with a token given by --token', async (t) => {
    const deployment = await startDeployment(t);
    const token = await deployment.mintToken({ maxAmount: 29900 });
    const { code, stdout, stderr } = await runNpmScript('agent', [
      'buy',
      '--protocol',
      'ucp',
      '--item',
      'svc-pro-monthly',
      '--email',
      'npm.agent@example.com',
      '--base-url',
      deployment.baseUrl,
      '--token',
      token,
    ]);
    assert.equal(code, 0, stderr);
    assert.match(stdout, new RegExp(`ucp token\\s+paying with the given token ${token}`));
    assert.match(stdout, /^order \{\n\s+"id": "ord_/m);
    const counts = await deployment.counts();
    assert.deepEqual([counts.succeeded, counts.orders], [1, 1]);
  });
});
