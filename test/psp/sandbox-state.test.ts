// db-scope: sqlite

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import Stripe from 'stripe';
import { sandboxDataFile } from '../../src/psp/sandbox/data-file.ts';
import { type RunningPspSandbox, startPspSandbox } from '../../src/psp/sandbox/main.ts';

const SECRET_KEY = 'sk_test_sandbox_state';
const PREVIEW_VERSION = '2026-07-29.preview';

function stripeAt(sandbox: { url: string }): Stripe {
  const { hostname, port } = new URL(sandbox.url);
  return new Stripe(SECRET_KEY, {
    host: hostname,
    port,
    protocol: 'http',
    maxNetworkRetries: 0,
    telemetry: false,
  });
}

function temporaryDirectory(t: TestContext): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'psp-sandbox-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function startOn(t: TestContext, dataFile?: string): Promise<RunningPspSandbox> {
  const sandbox = await startPspSandbox({ secretKey: SECRET_KEY, dataFile });
  t.after(() => sandbox.close());
  return sandbox;
}

async function mint(stripe: Stripe, paymentMethod = 'pm_card_visa'): Promise<{ id: string }> {
  return stripe.rawRequest(
    'POST',
    '/v1/test_helpers/shared_payment/granted_tokens',
    { payment_method: paymentMethod, usage_limits: { currency: 'usd', max_amount: 100_000 } },
    { apiVersion: PREVIEW_VERSION },
  );
}

function charge(stripe: Stripe, token: string, idempotencyKey: string, amount = 4200) {
  return stripe.paymentIntents.create(
    {
      amount,
      currency: 'usd',
      confirm: true,
      payment_method_data: { shared_payment_granted_token: token },
      automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
    } as never,
    { idempotencyKey, apiVersion: PREVIEW_VERSION },
  );
}

async function listPage(sandbox: RunningPspSandbox, query: string) {
  const response = await fetch(`${sandbox.url}/v1/payment_intents?${query}`, {
    headers: { authorization: `Bearer ${SECRET_KEY}` },
  });
  return {
    status: response.status,
    body: (await response.json()) as {
      object: string;
      url: string;
      data: { id: string }[];
      has_more: boolean;
      error?: { code?: string; param?: string; message: string };
    },
  };
}

describe('the PSP sandbox keeps its state in its data file', () => {
  it('remembers tokens, charges and idempotency records across a restart', async (t) => {
    const dataFile = path.join(temporaryDirectory(t), 'psp-sandbox.sqlite');
    const first = await startOn(t, dataFile);
    const before = stripeAt(first);
    const used = await mint(before);
    const unused = await mint(before, 'pm_card_mastercard');
    const revoked = await mint(before);
    await before.rawRequest(
      'POST',
      `/v1/test_helpers/shared_payment/granted_tokens/${revoked.id}/revoke`,
      {},
    );
    const intent = await charge(before, used.id, 'restart-charge-1');
    await first.close();

    const second = await startOn(t, dataFile);
    const after = stripeAt(second);
    const retrieved = await after.paymentIntents.retrieve(intent.id);
    assert.equal(retrieved.status, 'succeeded');
    assert.equal(retrieved.amount, 4200);
    const token = await after.rawRequest('GET', `/v1/shared_payment/granted_tokens/${used.id}`);
    assert.equal((token as { deactivated_reason: string }).deactivated_reason, 'consumed');
    const stillRevoked = await after.rawRequest('GET', `/v1/shared_payment/granted_tokens/${revoked.id}`);
    assert.equal((stillRevoked as { deactivated_reason: string }).deactivated_reason, 'revoked');

    await assert.rejects(charge(after, used.id, 'restart-charge-2'), {
      code: 'shared_payment_token_deactivated',
    });
    const replay = await charge(after, used.id, 'restart-charge-1');
    assert.equal(replay.id, intent.id, 'the same idempotency key replays the charge made before the restart');
    assert.equal(replay.lastResponse.headers['idempotent-replayed'], 'true');
    await assert.rejects(charge(after, used.id, 'restart-charge-1', 999), { type: 'StripeIdempotencyError' });

    const fresh = await charge(after, unused.id, 'restart-charge-3');
    assert.equal(fresh.status, 'succeeded', 'a token minted before the restart is still usable');
    assert.deepEqual(
      second.state.listPaymentIntents().map((pi) => pi.id),
      [fresh.id, intent.id],
    );
  });

  it('keeps nothing on disk without a data file', async (t) => {
    const first = await startOn(t);
    const token = await mint(stripeAt(first));
    await first.close();
    const second = await startOn(t);
    await assert.rejects(
      stripeAt(second).rawRequest('GET', `/v1/shared_payment/granted_tokens/${token.id}`),
      {
        code: 'resource_missing',
      },
    );
  });

  it('npm run psp-sandbox keeps its state under DATA_DIR', async (t) => {
    const dataDir = temporaryDirectory(t);
    const startStandalone = async () => {
      const child = spawn(process.execPath, ['src/psp/sandbox/main.ts'], {
        env: {
          PATH: process.env.PATH ?? '',
          DATA_DIR: dataDir,
          PSP_SANDBOX_PORT: '0',
          PSP_SANDBOX_SECRET_KEY: SECRET_KEY,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      t.after(() => child.kill('SIGKILL'));
      const exited = new Promise((resolve) => child.on('exit', resolve));
      let output = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk) => {
          output += chunk;
          const match = /listening on (http:\/\/\S+),/.exec(output);
          if (match?.[1]) resolve(match[1]);
        });
        child.on('exit', () => reject(new Error(`the sandbox exited:\n${output}`)));
      });
      assert.ok(output.includes(`state in ${sandboxDataFile(dataDir)}`), output);
      const stop = () => {
        child.kill('SIGTERM');
        return exited;
      };
      return { url, stop };
    };

    const first = await startStandalone();
    const token = await mint(stripeAt(first));
    const intent = await charge(stripeAt(first), token.id, 'standalone-1');
    await first.stop();
    const second = await startStandalone();
    assert.equal((await stripeAt(second).paymentIntents.retrieve(intent.id)).status, 'succeeded');
    await second.stop();
  });
});

describe('the PSP sandbox lists payment intents in pages as the provider does', () => {
  async function sandboxWithIntents(t: TestContext, count: number) {
    const sandbox = await startOn(t);
    const stripe = stripeAt(sandbox);
    const created: string[] = [];
    for (let index = 0; index < count; index++) {
      const token = await mint(stripe);
      created.push((await charge(stripe, token.id, `page-${index}`, 100 + index)).id);
    }
    return { sandbox, stripe, newestFirst: created.reverse() };
  }

  it('pages newest first with starting_after and back with ending_before, each intent once', async (t) => {
    const { sandbox, newestFirst } = await sandboxWithIntents(t, 7);
    const seen: string[] = [];
    let query = 'limit=3';
    for (;;) {
      const page = await listPage(sandbox, query);
      assert.equal(page.status, 200);
      assert.equal(page.body.object, 'list');
      assert.equal(page.body.url, '/v1/payment_intents');
      seen.push(...page.body.data.map((pi) => pi.id));
      assert.ok(seen.length <= newestFirst.length, `paging repeats intents: ${seen.join(', ')}`);
      if (!page.body.has_more) break;
      query = `limit=3&starting_after=${page.body.data.at(-1)?.id}`;
    }
    assert.deepEqual(seen, newestFirst);

    const before = await listPage(sandbox, `limit=2&ending_before=${newestFirst[4]}`);
    assert.deepEqual(
      before.body.data.map((pi) => pi.id),
      [newestFirst[2], newestFirst[3]],
    );
    assert.equal(before.body.has_more, true);
    const first = await listPage(sandbox, `limit=5&ending_before=${newestFirst[2]}`);
    assert.deepEqual(
      first.body.data.map((pi) => pi.id),
      [newestFirst[0], newestFirst[1]],
    );
    assert.equal(first.body.has_more, false);

    const byDefault = await listPage(sandbox, '');
    assert.equal(byDefault.body.data.length, 7);
    assert.equal(byDefault.body.has_more, false);
  });

  it('defaults to 10 and refuses a limit above 100, an unknown cursor and both cursors', async (t) => {
    const { sandbox, newestFirst } = await sandboxWithIntents(t, 11);
    const byDefault = await listPage(sandbox, '');
    assert.deepEqual(
      byDefault.body.data.map((pi) => pi.id),
      newestFirst.slice(0, 10),
    );
    assert.equal(byDefault.body.has_more, true);

    const tooMany = await listPage(sandbox, 'limit=101');
    assert.equal(tooMany.status, 400);
    assert.equal(tooMany.body.error?.param, 'limit');
    const unknown = await listPage(sandbox, 'starting_after=pi_unknown');
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.error?.code, 'resource_missing');
    assert.equal(unknown.body.error?.param, 'starting_after');
    const both = await listPage(sandbox, `starting_after=${newestFirst[1]}&ending_before=${newestFirst[3]}`);
    assert.equal(both.status, 400);
  });

  it("works with the official SDK's auto-pagination", async (t) => {
    const { stripe, newestFirst } = await sandboxWithIntents(t, 12);
    const all = await stripe.paymentIntents.list({ limit: 5 }).autoPagingToArray({ limit: 100 });
    assert.deepEqual(
      all.map((pi) => pi.id),
      newestFirst,
    );
    const firstSeven = await stripe.paymentIntents.list({ limit: 3 }).autoPagingToArray({ limit: 7 });
    assert.deepEqual(
      firstSeven.map((pi) => pi.id),
      newestFirst.slice(0, 7),
    );
  });
});
