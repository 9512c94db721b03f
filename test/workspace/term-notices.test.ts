// db-scope: both

import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it, type TestContext } from 'node:test';
import type { ParsedMail } from 'mailparser';
import pino from 'pino';
import { createUser } from '../../src/accounts/index.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { createSmtpTransport } from '../../src/mail/index.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';
import { DAY_MS, HOUR_MS } from '../../src/shared/clock.ts';
import { newId } from '../../src/shared/ids.ts';
import { getWorkspace, type MemberRole, provisionWorkspace } from '../../src/workspace/index.ts';
import { testDialect } from '../helpers/database.ts';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.ts';
import { startTestSmtpServer, type TestSmtpServer } from '../helpers/smtp.ts';

const BASE_URL = 'http://svc.test';
/** The Pro month bought at the test clock's start (2026-03-01T12:00Z) ends here. */
const TERM_END = Date.parse('2026-04-01T12:00:00.000Z');

const SUBJECTS = {
  sevenDays: 'Your Pro term ends in 7 days',
  oneDay: 'Your Pro term ends tomorrow',
  free: '"Acme" is now on the Free plan',
};

interface Fixture {
  runtime: TestRuntime;
  smtp: TestSmtpServer;
  logLines: Record<string, unknown>[];
  workspaceId: string;
  /** Moves the clock to `msBeforeEnd` before the term's end (negative: after it) and runs every sweep and email. */
  at(msBeforeEnd: number, runtimes?: Runtime[]): Promise<void>;
  /** The term emails received so far with their recipients, by kind then address (delivery order varies). */
  termMails(): { subject: string; to: string[] }[];
}

async function startFixture(t: TestContext): Promise<Fixture> {
  const smtp = await startTestSmtpServer();
  t.after(() => smtp.close());
  const logLines: Record<string, unknown>[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  });
  const runtime = await startTestRuntime(t, {
    env: { BASE_URL },
    mailTransport: createSmtpTransport(smtp.url),
    logger: pino({ level: 'info' }, logStream),
  });
  const { workspace } = await inTransaction(runtime.database.db, (trx) =>
    provisionWorkspace(
      trx,
      {
        name: 'Acme',
        plan: 'pro',
        ownerEmail: 'buyer@example.com',
        term: { term: 'month', startsAt: runtime.clock.now(), channel: 'acp', orderId: 'ord_1' },
      },
      { clock: runtime.clock, baseUrl: BASE_URL },
    ),
  );
  return {
    runtime,
    smtp,
    logLines,
    workspaceId: workspace.id,
    async at(msBeforeEnd, runtimes = [runtime]) {
      runtime.clock.set(new Date(TERM_END - msBeforeEnd));
      await Promise.all(runtimes.map((each) => each.jobs.runSweeps()));
      for (const each of runtimes) await each.jobs.drain();
    },
    termMails() {
      return smtp.received
        .filter((mail) => Object.values(SUBJECTS).includes(mail.subject ?? ''))
        .map((mail) => ({ subject: mail.subject ?? '', to: recipients(mail) }))
        .sort((a, b) => order(a.subject) - order(b.subject) || a.to.join().localeCompare(b.to.join()));
    },
  };
}

const order = (subject: string) => Object.values(SUBJECTS).indexOf(subject);

function recipients(mail: ParsedMail): string[] {
  return [mail.to ?? []].flat().flatMap((to) => to.value.map((address) => address.address ?? ''));
}

async function addMember(
  runtime: TestRuntime,
  workspaceId: string,
  email: string,
  role: MemberRole,
  account?: string,
) {
  let userId: string | null = null;
  if (account) {
    const user = await createUser(runtime.database.db, runtime.clock, { email: account, passwordHash: null });
    assert.ok(user.ok);
    userId = user.value.id;
  }
  await runtime.database.db
    .insertInto('workspace_members')
    .values({
      id: newId('mem', runtime.clock.now()),
      workspace_id: workspaceId,
      email,
      role,
      user_id: userId,
      created_at: runtime.clock.now().getTime(),
    })
    .execute();
}

/** Two owners (one signs in with an address other than the one invited), an admin and a member. */
async function withTeam(fixture: Fixture) {
  const { runtime, workspaceId } = fixture;
  await addMember(runtime, workspaceId, 'buyer@example.com', 'owner', 'ada@example.com');
  await addMember(runtime, workspaceId, 'grace@example.com', 'owner');
  await addMember(runtime, workspaceId, 'admin@example.com', 'admin');
  await addMember(runtime, workspaceId, 'member@example.com', 'member');
}

const OWNERS = ['ada@example.com', 'grace@example.com'];
const each = (subject: string) => OWNERS.map((to) => ({ subject, to: [to] }));

describe(`emails before and after a term ends, on ${testDialect}`, () => {
  it('tells every owner 7 days and 1 day before the end and when the workspace moved to Free, each once, with a link to Billing', async (t) => {
    const fixture = await startFixture(t);
    await withTeam(fixture);

    await fixture.at(8 * DAY_MS);
    assert.deepEqual(fixture.termMails(), [], '8 days before: nothing yet');
    await fixture.at(7 * DAY_MS);
    assert.deepEqual(fixture.termMails(), each(SUBJECTS.sevenDays));
    await fixture.at(2 * DAY_MS);
    assert.deepEqual(fixture.termMails(), each(SUBJECTS.sevenDays), '2 days before: nothing new');
    await fixture.at(1 * DAY_MS);
    assert.deepEqual(fixture.termMails(), [...each(SUBJECTS.sevenDays), ...each(SUBJECTS.oneDay)]);
    await fixture.at(0);
    const all = [...each(SUBJECTS.sevenDays), ...each(SUBJECTS.oneDay), ...each(SUBJECTS.free)];
    assert.deepEqual(fixture.termMails(), all);
    assert.equal((await getWorkspace(fixture.runtime.database.db, fixture.workspaceId))?.plan, 'free');
    await fixture.at(-3 * DAY_MS);
    assert.deepEqual(fixture.termMails(), all, 'after the end: nothing new');

    const billing = `${BASE_URL}/w/${fixture.workspaceId}/billing`;
    const [sevenDays, oneDay, free] = [SUBJECTS.sevenDays, SUBJECTS.oneDay, SUBJECTS.free].map((subject) =>
      fixture.smtp.received.find((mail) => mail.subject === subject),
    );
    assert.match(sevenDays?.text ?? '', /ends in 7 days, on April 1, 2026 \(UTC\)\.\nIt does not renew/);
    assert.match(oneDay?.text ?? '', /ends tomorrow, on April 1, 2026/);
    assert.match(
      free?.text ?? '',
      /ended on April 1, 2026 \(UTC\), and the workspace is now on the Free plan/,
    );
    for (const mail of [sevenDays, oneDay, free]) {
      assert.ok(mail?.text?.includes(billing), 'the text links to Billing');
      assert.ok(String(mail?.html).includes(`href="${billing}"`), 'the HTML links to Billing');
    }

    const sent = fixture.logLines.filter((line) => line.event === 'mail.sent').map((line) => line.template);
    for (const template of ['term_ending_7_days', 'term_ending_1_day', 'moved_to_free'])
      assert.equal(
        sent.filter((name) => name === template).length,
        2,
        `mail.sent ${template} once per owner`,
      );
    const queued = fixture.logLines.filter((line) => line.event === 'term.reminder_queued');
    assert.deepEqual(
      queued.map((line) => [line.kind, line.recipients, line.orderId]),
      [
        ['reminder_7_days', 2, 'ord_1'],
        ['reminder_1_day', 2, 'ord_1'],
      ],
    );
    const ended = fixture.logLines.find((line) => line.event === 'term.ended');
    assert.equal(ended?.ownersNotified, 2);
    assert.ok(!JSON.stringify(fixture.logLines).includes('ada@example.com'), 'no address in the logs');
  });

  it('sends once when the sweep runs twice, and when two instances on one database sweep at the same time', async (t) => {
    const fixture = await startFixture(t);
    await withTeam(fixture);
    // PostgreSQL: a second pool, as a second instance has. SQLite: node:sqlite waits for a lock
    // synchronously, so a second handle in one process would deadlock; the instances share one.
    const database =
      testDialect === 'postgres' ? fixture.runtime.database.reopen() : fixture.runtime.database;
    const second = await createRuntime(fixture.runtime.config, {
      clock: fixture.runtime.clock,
      database,
      mailTransport: createSmtpTransport(fixture.smtp.url),
    });
    t.after(async () => {
      await second.close();
      if (database !== fixture.runtime.database) await database.close();
    });
    const both = [fixture.runtime, second];

    await fixture.at(7 * DAY_MS, both);
    await fixture.at(7 * DAY_MS - HOUR_MS, both);
    await fixture.at(1 * DAY_MS, both);
    await fixture.at(1 * DAY_MS - HOUR_MS);
    await fixture.at(0, both);
    await fixture.at(-HOUR_MS, both);
    assert.deepEqual(fixture.termMails(), [
      ...each(SUBJECTS.sevenDays),
      ...each(SUBJECTS.oneDay),
      ...each(SUBJECTS.free),
    ]);
    const notices = await fixture.runtime.database.db
      .selectFrom('term_notices')
      .select(['kind', 'recipients'])
      .orderBy('sent_at')
      .execute();
    assert.deepEqual(
      notices.map((notice) => ({ ...notice })),
      [
        { kind: 'reminder_7_days', recipients: 2 },
        { kind: 'reminder_1_day', recipients: 2 },
        { kind: 'moved_to_free', recipients: 2 },
      ],
    );
  });

  it('after downtime sends only what still makes sense: the 1-day reminder with less than a day left, none after the end', async (t) => {
    const fixture = await startFixture(t);
    await withTeam(fixture);
    await fixture.at(12 * HOUR_MS);
    assert.deepEqual(fixture.termMails(), each(SUBJECTS.oneDay), 'no late "7 days" reminder');

    const later = await startFixture(t);
    await withTeam(later);
    await later.at(3 * DAY_MS);
    assert.deepEqual(later.termMails(), each(SUBJECTS.sevenDays));
    await later.at(-5 * DAY_MS);
    assert.deepEqual(
      later.termMails(),
      [...each(SUBJECTS.sevenDays), ...each(SUBJECTS.free)],
      'down over the 1-day reminder and the end: only the moved-to-Free email',
    );
  });

  it('writes to the owner invitation’s address while nobody has accepted it', async (t) => {
    const fixture = await startFixture(t);
    await fixture.at(7 * DAY_MS);
    assert.deepEqual(fixture.termMails(), [{ subject: SUBJECTS.sevenDays, to: ['buyer@example.com'] }]);
  });

  it('sends no reminder for a term followed by one already paid, and does not say the workspace moved to Free', async (t) => {
    const fixture = await startFixture(t);
    await withTeam(fixture);
    const db = fixture.runtime.database.db;
    await db
      .insertInto('workspace_terms')
      .values({
        id: 'term_next',
        workspace_id: fixture.workspaceId,
        plan: 'pro',
        term: 'month',
        starts_at: TERM_END,
        ends_at: TERM_END + 30 * DAY_MS,
        channel: 'acp',
        order_id: 'ord_next',
        ended_at: null,
        created_at: fixture.runtime.clock.now().getTime(),
      })
      .execute();

    for (const before of [7 * DAY_MS, 1 * DAY_MS, 0, -DAY_MS]) await fixture.at(before);
    assert.deepEqual(fixture.termMails(), []);
    assert.equal((await getWorkspace(db, fixture.workspaceId))?.plan, 'pro');

    await fixture.at(-23 * DAY_MS);
    assert.deepEqual(fixture.termMails(), each(SUBJECTS.sevenDays), 'the next term has its own reminders');
  });
});
