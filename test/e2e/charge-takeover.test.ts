// db-scope: both

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startPspSandbox } from '../../src/psp/sandbox/main.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { createTestDatabase, processDatabaseUrl } from '../helpers/database.ts';
import { API_VERSION, mintToken, SANDBOX_KEY, WEBHOOK_SECRET } from '../helpers/purchase.ts';
import { type ServiceProcess, startServiceProcess } from '../helpers/service-process.ts';

interface Answer {
  status: number;
  retryAfter: number | undefined;
  body: { id?: string; status?: string; order?: { id?: string } };
}

async function post(url: string, body: unknown, key: string): Promise<Answer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });
  const retryAfter = response.headers.get('retry-after');
  return {
    status: response.status,
    retryAfter: retryAfter === null ? undefined : Number(retryAfter),
    body: (await response.json()) as Answer['body'],
  };
}

async function startInstance(t: TestContext, env: Record<string, string>): Promise<ServiceProcess> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-takeover-'));
  const service = await startServiceProcess({ ...env, DATA_DIR: dataDir }, 30_000);
  t.after(async () => {
    await service.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });
  return service;
}

describe('a purchase whose charging instance is killed (kill -9)', () => {
  it('is completed by a retry on the other instance after at most 5 s of advised waits, with one charge', async (t) => {
    const database = await createTestDatabase({ shared: true });
    t.after(() => database.close());
    const sandbox = await startPspSandbox({ secretKey: SANDBOX_KEY });
    t.after(() => sandbox.close());
    const env = {
      DATABASE_URL: processDatabaseUrl(database),
      PSP_SECRET_KEY: SANDBOX_KEY,
      PSP_API_BASE: sandbox.url,
      PSP_API_VERSION: API_VERSION,
      PSP_WEBHOOK_SECRET: WEBHOOK_SECRET,
      MPP_SECRET: 'takeover-test-mpp-secret-of-enough-length',
      ORDER_LINK_SECRET: 'takeover-test-order-link-secret-of-enough-length',
    };
    const first = await startInstance(t, env);
    const second = await startInstance(t, env);

    const token = await mintToken(sandbox.url, new ManualClock(new Date()));
    const created = await post(
      `${first.url}/api/acp/checkout_sessions`,
      {
        line_items: [{ id: 'svc-pro-monthly' }],
        currency: 'usd',
        capabilities: {},
        buyer: { email: 'takeover.buyer@example.com' },
      },
      randomUUID(),
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const completeUrl = (base: string) => `${base}/api/acp/checkout_sessions/${created.body.id}/complete`;
    const body = {
      payment_data: {
        handler_id: 'psp_spt',
        instrument: { type: 'card', credential: { type: 'spt', token } },
      },
    };
    const key = randomUUID();

    // The provider answers slowly, so the first instance is inside its charge when it is killed.
    sandbox.faults.latency(2000);
    const abandoned = post(completeUrl(first.url), body, key).catch(() => undefined);
    for (;;) {
      const charging = await database.db
        .selectFrom('payment_attempts')
        .select('locked_by')
        .where('status', '=', 'pending')
        .where('locked_by', 'is not', null)
        .executeTakeFirst();
      if (charging) break;
      await sleep(20);
    }
    await first.stop('SIGKILL');
    await abandoned;
    sandbox.faults.reset();

    const killedAt = Date.now();
    let advisedWaitS = 0;
    let answer = await post(completeUrl(second.url), body, key);
    while (answer.status === 409 && answer.retryAfter !== undefined) {
      advisedWaitS += answer.retryAfter;
      assert.ok(advisedWaitS <= 5, `the retry was told to wait ${advisedWaitS} s in all`);
      await sleep(answer.retryAfter * 1000);
      answer = await post(completeUrl(second.url), body, key);
    }
    const tookMs = Date.now() - killedAt;
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.status, 'completed');
    assert.ok(answer.body.order?.id);

    // The killed request's charge reached the provider too; the retry's was its replay.
    const intents = sandbox.state.listPaymentIntents();
    assert.equal(intents.filter((intent) => intent.status === 'succeeded').length, 1);
    t.diagnostic(`completed ${tookMs} ms after the kill, after ${advisedWaitS} s of advised waits`);
  });
});
