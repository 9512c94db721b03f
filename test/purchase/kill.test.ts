// db-scope: both

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config.ts';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.ts';
import { createSmtpTransport } from '../../src/mail/index.ts';
import { startPspSandbox } from '../../src/psp/sandbox/main.ts';
import { createRuntime } from '../../src/runtime.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { TEST_DATABASE_URL, testDialect } from '../helpers/database.ts';
import { mintToken, purchaseRequest, SANDBOX_KEY } from '../helpers/purchase.ts';
import { startTestSmtpServer } from '../helpers/smtp.ts';

interface ChildRun {
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string }>;
  kill(): void;
}

function runChild(env: Record<string, string>): ChildRun {
  const child = spawn(process.execPath, ['test/fixtures/purchase-child.ts'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  return {
    exit: new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stdout }))),
    kill: () => child.kill('SIGKILL'),
  };
}

/** A database both processes can open: a SQLite file, or a PostgreSQL schema of its own. */
async function sharedDatabase(): Promise<{
  env: Record<string, string>;
  open(): DatabaseHandle;
  drop(): Promise<void>;
}> {
  const url = TEST_DATABASE_URL;
  if (!url) {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-kill-'));
    const file = path.join(dir, 'svc.sqlite');
    return {
      env: { CHILD_DATABASE_URL: `sqlite:${file}` },
      open: () => openDatabase({ kind: 'sqlite', file }),
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const schema = `kill_${Date.now().toString(36)}`;
  const admin = openDatabase({ kind: 'postgres', url });
  await sql`create schema ${sql.id(schema)}`.execute(admin.db);
  return {
    env: { CHILD_DATABASE_URL: url, CHILD_SEARCH_PATH: schema },
    open: () => openDatabase({ kind: 'postgres', url }, { searchPath: schema }),
    drop: async () => {
      await sql`drop schema ${sql.id(schema)} cascade`.execute(admin.db);
      await admin.close();
    },
  };
}

describe(`a purchase process killed with SIGKILL on ${testDialect}`, () => {
  it('is finished by the restarted process with one charge, one workspace, one email', async (t) => {
    const clock = new ManualClock(new Date());
    const sandbox = await startPspSandbox({ secretKey: SANDBOX_KEY });
    t.after(() => sandbox.close());
    const shared = await sharedDatabase();
    t.after(() => shared.drop());
    const request = purchaseRequest(await mintToken(sandbox.url, clock), {
      attemptKey: 'mpp:challenge-kill',
    });
    const env = {
      ...shared.env,
      CHILD_PSP_URL: sandbox.url,
      CHILD_PSP_KEY: SANDBOX_KEY,
      CHILD_REQUEST: JSON.stringify(request),
    };

    // The sandbox charges, then holds its answer; the process dies while waiting for it.
    sandbox.faults.latency(1000);
    const first = runChild(env);
    const deadline = Date.now() + 15_000;
    while (sandbox.state.listPaymentIntents().length === 0) {
      assert.ok(Date.now() < deadline, 'the child reached the provider');
      await new Promise((r) => setTimeout(r, 20));
    }
    first.kill();
    assert.equal((await first.exit).signal, 'SIGKILL');
    sandbox.faults.reset();
    // The provider finishes the dead request (it keeps its idempotency key busy until then).
    await new Promise((r) => setTimeout(r, 1100));

    // Restarted after the dead request's lease has run out, the same request finishes the purchase.
    const second = runChild({ ...env, CHILD_CLOCK_OFFSET_MS: '120000' });
    const { code, stdout } = await second.exit;
    assert.equal(code, 0);
    const outcome = JSON.parse(stdout);
    assert.equal(outcome.kind, 'completed');

    const smtp = await startTestSmtpServer();
    t.after(() => smtp.close());
    const database = shared.open();
    clock.set(new Date(Date.now() + 130_000));
    const runtime = await createRuntime(loadConfig({ NODE_ENV: 'test' }), {
      clock,
      database,
      mailTransport: createSmtpTransport(smtp.url),
    });
    t.after(async () => {
      await runtime.close();
      await database.close();
    });
    await runtime.jobs.drain();
    await smtp.waitFor(1);
    const intents = sandbox.state.listPaymentIntents();
    assert.deepEqual(
      intents.map((pi) => [pi.status, pi.amount]),
      [['succeeded', 29_900]],
    );
    assert.equal(outcome.order.paymentIntentId, intents[0]?.id);
    const orders = await database.db.selectFrom('orders').selectAll().execute();
    const workspaces = await database.db.selectFrom('workspaces').selectAll().execute();
    assert.deepEqual([orders.length, workspaces.length, smtp.received.length], [1, 1, 1]);
  });
});
