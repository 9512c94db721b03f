// db-scope: both

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { purchase } from '../../src/purchase/index.ts';
import { DAY_MS } from '../../src/shared/clock.ts';
import { endElapsedTerms } from '../../src/workspace/index.ts';
import { createTestDatabase, type TestDatabase, testDialect } from '../helpers/database.ts';
import { purchaseRequest, startPurchaseFixture } from '../helpers/purchase.ts';

const run = promisify(execFile);

/** The service's own configuration pointing at the test database: DATA_DIR on SQLite, DATABASE_URL on PostgreSQL. */
function serviceEnvironment(database: TestDatabase): Record<string, string> {
  const connection = database.connection ?? assert.fail('the test database must be shared');
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', NODE_ENV: 'test' };
  if (testDialect === 'sqlite') {
    env.DATA_DIR = path.dirname(connection.url.slice('sqlite:'.length));
    return env;
  }
  const url = new URL(connection.url);
  url.searchParams.set('options', `-c search_path=${connection.searchPath}`);
  env.DATABASE_URL = url.href;
  return env;
}

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

describe(`an operator finds workspaces and orders with the CLI on ${testDialect}`, () => {
  it('lists and shows workspaces and orders made by purchases, as tables or JSON', async (t) => {
    const database = await createTestDatabase({ shared: true });
    t.after(() => database.close());
    const fixture = await startPurchaseFixture(t, { database });
    const now = Date.now();
    const buy = async (at: number, request: Parameters<typeof purchaseRequest>[1]) => {
      fixture.clock.set(new Date(at));
      const outcome = await purchase(
        fixture.runtime.purchases,
        purchaseRequest(await fixture.mintToken(), request),
      );
      return outcome.kind === 'completed' ? outcome.order : assert.fail(JSON.stringify(outcome));
    };
    const ended = await buy(now - 40 * DAY_MS, {
      channel: 'mpp',
      itemId: 'svc-starter-monthly',
      buyer: { email: 'first@example.com' },
    });
    const expired = await buy(now - 8 * DAY_MS, {
      channel: 'acp',
      itemId: 'svc-pro-annual',
      buyer: { email: 'Late@Example.com', companyName: 'Late Ltd' },
    });
    const pending = await buy(now - 60_000, {
      channel: 'ucp',
      itemId: 'svc-enterprise-monthly',
      buyer: { email: 'new@example.com', companyName: 'New Co' },
    });
    fixture.clock.set(new Date(now));
    // The owner of the first workspace took up the invitation (the web app does this).
    await database.db
      .updateTable('workspace_invitations')
      .set({ accepted_at: now - 39 * DAY_MS })
      .where('workspace_id', '=', ended.workspaceId)
      .execute();
    await database.db
      .insertInto('workspace_members')
      .values({
        id: 'member_first',
        workspace_id: ended.workspaceId,
        email: 'first@example.com',
        role: 'owner',
        created_at: now - 39 * DAY_MS,
      })
      .execute();
    assert.equal(
      (await endElapsedTerms(database.db, { clock: fixture.clock, baseUrl: 'http://svc.test' })).length,
      1,
    );

    const env = serviceEnvironment(database);
    const svc = async (...args: string[]): Promise<Outcome> => {
      try {
        const { stdout, stderr } = await run(process.execPath, ['src/cli.ts', ...args], { env });
        return { code: 0, stdout, stderr };
      } catch (error) {
        const failed = error as { code: number; stdout: string; stderr: string };
        return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
      }
    };
    const lines = (outcome: Outcome) => outcome.stdout.trimEnd().split('\n');

    const listed = await svc('workspaces', 'list');
    assert.equal(listed.code, 0, listed.stderr);
    const [header, ...rows] = lines(listed);
    assert.match(header ?? '', /^ID\s+NAME\s+PLAN\s+TERM ENDS\s+OWNER\s+INVITATION\s+CREATED$/);
    assert.equal(rows.length, 3);
    const termEnd = (at: Date) => at.toISOString().replace(/\.\d{3}Z$/, 'Z');
    assert.match(
      rows[0] ?? '',
      new RegExp(
        `^${pending.workspaceId}\\s+New Co\\s+enterprise\\s+${termEnd(pending.termEndsAt)}\\s+new@example\\.com\\s+pending\\s`,
      ),
    );
    assert.match(
      rows[1] ?? '',
      new RegExp(
        `^${expired.workspaceId}\\s+Late Ltd\\s+pro\\s+${termEnd(expired.termEndsAt)}\\s+Late@Example\\.com\\s+expired\\s`,
      ),
    );
    assert.match(
      rows[2] ?? '',
      new RegExp(`^${ended.workspaceId}\\s+.+\\s+free\\s+-\\s+first@example\\.com\\s+accepted\\s`),
    );

    const newest = await svc('workspaces', 'list', '--limit', '1');
    assert.equal(lines(newest).length, 2);
    assert.ok(newest.stdout.includes(pending.workspaceId));
    const byEmail = await svc('workspaces', 'list', '--email', 'late@example.com', '--json');
    const found = JSON.parse(byEmail.stdout) as { id: string; plan: string; owner: { invitation: string } }[];
    assert.deepEqual(
      found.map((w) => [w.id, w.plan, w.owner.invitation]),
      [[expired.workspaceId, 'pro', 'expired']],
    );
    assert.equal(
      (await svc('workspaces', 'list', '--email', 'nobody@example.com')).stdout,
      'no workspaces\n',
    );

    const shown = await svc('workspaces', 'show', ended.workspaceId);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^plan {7}free$/m);
    assert.match(
      shown.stdout,
      new RegExp(`^starter\\s+month\\s+\\S+\\s+\\S+\\s+ended \\S+\\s+mpp\\s+${ended.id}$`, 'm'),
    );
    assert.match(shown.stdout, /^first@example\.com\s+owner\s+\S+$/m);
    assert.match(shown.stdout, /^invite_\S+\s+first@example\.com\s+owner\s+accepted\s/m);
    const shownJson = JSON.parse((await svc('workspaces', 'show', pending.workspaceId, '--json')).stdout);
    assert.equal(shownJson.plan, 'enterprise');
    assert.equal(shownJson.terms[0].endedAt, null);
    assert.equal(shownJson.invitations[0].state, 'pending');

    const orders = await svc('orders', 'list');
    const [ordersHeader, ...orderRows] = lines(orders);
    assert.match(ordersHeader ?? '', /^ID\s+CREATED\s+CHANNEL\s+ITEM\s+AMOUNT\s+WORKSPACE$/);
    assert.deepEqual(
      orderRows.map((row) => row.split(/\s{2,}/)),
      [
        [
          pending.id,
          termEnd(pending.createdAt),
          'ucp',
          'svc-enterprise-monthly',
          '1999.00 USD',
          pending.workspaceId,
        ],
        [expired.id, termEnd(expired.createdAt), 'acp', 'svc-pro-annual', '3099.00 USD', expired.workspaceId],
        [ended.id, termEnd(ended.createdAt), 'mpp', 'svc-starter-monthly', '99.00 USD', ended.workspaceId],
      ],
    );
    const ofWorkspace = JSON.parse(
      (await svc('orders', 'list', '--workspace', expired.workspaceId, '--json')).stdout,
    ) as { id: string; amount: number }[];
    assert.deepEqual(
      ofWorkspace.map((o) => [o.id, o.amount]),
      [[expired.id, 309900]],
    );
    const order = await svc('orders', 'show', expired.id);
    assert.match(order.stdout, /^amount {10}3099\.00 USD$/m);
    assert.match(order.stdout, /^buyer {11}Late@Example\.com$/m);
    assert.match(order.stdout, new RegExp(`^payment intent  ${expired.paymentIntentId}$`, 'm'));
    const pageUrl = new URL(/^order page {6}(\S+)$/m.exec(order.stdout)?.[1] ?? '');
    const page = await fixture.runtime.app.inject(`${pageUrl.pathname}${pageUrl.search}`);
    assert.equal(page.statusCode, 200, 'the link an operator hands the buyer opens the order page');

    const unknown = await svc('orders', 'show', 'ord_unknown');
    assert.deepEqual([unknown.code, unknown.stderr], [1, 'no order ord_unknown\n']);
    const unknownOperatorTerm = await svc('orders', 'show', 'opord_06h1fk7tc9xe4p9c1batwhw588');
    assert.deepEqual(
      [unknownOperatorTerm.code, unknownOperatorTerm.stderr],
      [1, 'no order opord_06h1fk7tc9xe4p9c1batwhw588\n'],
    );
    const unknownOption = await svc('orders', 'list', '--bogus');
    assert.equal(unknownOption.code, 64);
    assert.match(unknownOption.stderr, /^Unknown option '--bogus'/);
    const badMailboxLimit = await svc('mailbox', 'list', '--limit', 'abc');
    assert.equal(badMailboxLimit.code, 64);
    const badLimit = await svc('orders', 'list', '--limit', '0');
    assert.equal(badLimit.code, 64);
    assert.match(badLimit.stderr, /--limit must be a whole number from 1 to 1000/);
    assert.equal((await svc('workspaces', 'show')).code, 64);
  });
});
