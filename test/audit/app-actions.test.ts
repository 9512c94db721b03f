// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type RecordAccountChange, resetPasswordWithLink } from '../../src/accounts/index.ts';
import { type AuditEvent, listAuditEvents, recordAuditEvent } from '../../src/audit/index.ts';
import type { Db } from '../../src/db/schema.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { changeMemberRole } from '../../src/workspace/index.ts';
import { EMAIL_CHANGE_LINK, RESET_LINK, SIGN_IN_LINK } from '../helpers/account-mail.ts';
import { testDialect } from '../helpers/database.ts';
import { SoftAuthenticator } from '../helpers/soft-authenticator.ts';
import { type AppFixture, acceptAsNewAccount, startAppFixture, webClient } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'a different horse, battery and staple';
const ORIGIN = 'http://svc.test';
/** Where the test requests come from (Fastify's inject). */
const CLIENT_IP = '127.0.0.1';

type Row = [action: string, actorLabel: string, actorUserId: string | null, target: AuditEvent['target']];

async function eventsOf(db: Db, workspaceId: string): Promise<AuditEvent[]> {
  return (await listAuditEvents(db, workspaceId, {}, { limit: 200 })).items;
}

/** Runs `change` in a transaction that then fails: neither the change nor its event may remain. */
async function rolledBack(db: Db, change: (trx: Db) => Promise<unknown>): Promise<void> {
  await assert.rejects(
    inTransaction(db, async (trx) => {
      await change(trx);
      throw new Error('rolled back');
    }),
    /rolled back/,
  );
}

/**
 * Runs one step from a clean log and answers what each workspace recorded, oldest first, after
 * checking that every event came from the test's client.
 */
async function recordedBy(db: Db, workspaceIds: string[], step: () => Promise<void>): Promise<Row[][]> {
  await db.deleteFrom('audit_events').execute();
  await step();
  const perWorkspace: Row[][] = [];
  for (const workspaceId of workspaceIds) {
    const events = (await eventsOf(db, workspaceId)).reverse();
    for (const event of events) assert.equal(event.ip, CLIENT_IP, `${event.action}: the client's address`);
    perWorkspace.push(events.map((e) => [e.action, e.actor.label, e.actor.user_id, e.target]));
  }
  return perWorkspace;
}

/** The same, for one workspace. */
async function recordedIn(db: Db, workspaceId: string, step: () => Promise<void>): Promise<Row[]> {
  const [rows] = await recordedBy(db, [workspaceId], step);
  assert.ok(rows);
  return rows;
}

function sentLinkPath(fixture: AppFixture, email: string, pattern: RegExp): string {
  const link = fixture.sent
    .filter((mail) => mail.to === email)
    .at(-1)
    ?.text.match(pattern)?.[0];
  assert.ok(link, `no link matching ${pattern} emailed to ${email}`);
  return new URL(link).pathname;
}

async function userIdOf(db: Db, email: string): Promise<string> {
  return (await db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()).id;
}

async function memberIdOf(db: Db, workspaceId: string, email: string): Promise<string> {
  const row = await db
    .selectFrom('workspace_members')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  return row.id;
}

async function openInvitationIdOf(db: Db, workspaceId: string, email: string): Promise<string> {
  const row = await db
    .selectFrom('workspace_invitations')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('email', '=', email)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('withdrawn_at', 'is', null)
    .executeTakeFirstOrThrow();
  return row.id;
}

describe(`the audit log records the app's member and account actions, on ${testDialect}`, () => {
  it('records each member change once, by whom, to whom, in its workspace; a rolled-back change records nothing', async (t) => {
    const fixture = await startAppFixture(t);
    const db = fixture.runtime.database.db;
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    const ada = await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
    const adaId = await userIdOf(db, 'ada@example.com');
    const members = `/w/${workspaceId}/members`;
    await ada.get(members);
    const byAda = (action: string, target: AuditEvent['target']): Row => [
      action,
      'ada@example.com',
      adaId,
      target,
    ];

    const invite = (email: string, role: string) => ada.post(`${members}/invitations`, { email, role });
    const invited = await recordedIn(db, workspaceId, async () => {
      assert.equal((await invite('grace@example.com', 'admin')).status, 303);
    });
    const firstInvitation = await openInvitationIdOf(db, workspaceId, 'grace@example.com');
    assert.deepEqual(invited, [
      byAda('member.invited', {
        type: 'invitation',
        id: firstInvitation,
        label: 'grace@example.com (admin)',
      }),
    ]);

    const resent = await recordedIn(db, workspaceId, async () => {
      const answer = await ada.post(`${members}/invitations/${firstInvitation}/resend`, {});
      assert.equal(answer.status, 303);
    });
    const secondInvitation = await openInvitationIdOf(db, workspaceId, 'grace@example.com');
    assert.notEqual(secondInvitation, firstInvitation);
    assert.deepEqual(resent, [
      byAda('member.invitation_resent', {
        type: 'invitation',
        id: secondInvitation,
        label: 'grace@example.com (admin)',
      }),
    ]);

    const revoked = await recordedIn(db, workspaceId, async () => {
      const answer = await ada.post(`${members}/invitations/${secondInvitation}/revoke`, {});
      assert.equal(answer.status, 303);
    });
    assert.deepEqual(revoked, [
      byAda('member.invitation_revoked', {
        type: 'invitation',
        id: secondInvitation,
        label: 'grace@example.com (admin)',
      }),
    ]);

    assert.equal((await invite('bob@example.com', 'member')).status, 303);
    const bobInvitation = await openInvitationIdOf(db, workspaceId, 'bob@example.com');
    const joined = await recordedIn(db, workspaceId, async () => {
      await acceptAsNewAccount(
        fixture.runtime.app,
        await fixture.latestInvitationPath('bob@example.com'),
        PASSWORD,
      );
    });
    const bobId = await userIdOf(db, 'bob@example.com');
    const bobMember = await memberIdOf(db, workspaceId, 'bob@example.com');
    assert.deepEqual(
      joined.filter(([action]) => action === 'invitation.accepted'),
      [
        [
          'invitation.accepted',
          'bob@example.com',
          bobId,
          { type: 'invitation', id: bobInvitation, label: 'bob@example.com (member)' },
        ],
      ],
      'a member joining is the invitation accepted, by the new member',
    );

    await rolledBack(db, (trx) =>
      changeMemberRole(
        trx,
        fixture.runtime,
        { workspaceId, actorUserId: adaId, memberId: bobMember, role: 'admin' },
        { actor: { userId: adaId, label: 'ada@example.com' } },
      ),
    );
    assert.equal(
      (await eventsOf(db, workspaceId)).filter((e) => e.action === 'member.role_changed').length,
      0,
      'a rolled-back role change records nothing',
    );
    assert.equal(
      (await db.selectFrom('workspace_members').select('role').where('id', '=', bobMember).executeTakeFirst())
        ?.role,
      'member',
    );

    const roleChanged = await recordedIn(db, workspaceId, async () => {
      assert.equal((await ada.post(`${members}/${bobMember}/role`, { role: 'admin' })).status, 303);
    });
    assert.deepEqual(roleChanged, [
      byAda('member.role_changed', {
        type: 'member',
        id: bobMember,
        label: 'bob@example.com: member → admin',
      }),
    ]);

    const adaMember = await memberIdOf(db, workspaceId, 'ada@example.com');
    const transferred = await recordedIn(db, workspaceId, async () => {
      const answer = await ada.post(`${members}/transfer`, { new_owner: bobMember, step_down: 'yes' });
      assert.equal(answer.status, 303);
    });
    assert.deepEqual(transferred, [
      byAda('member.ownership_transferred', {
        type: 'member',
        id: bobMember,
        label: 'bob@example.com: admin → owner; ada@example.com: owner → admin',
      }),
    ]);

    assert.equal((await invite('carol@example.com', 'member')).status, 303);
    const carol = await acceptAsNewAccount(
      fixture.runtime.app,
      await fixture.latestInvitationPath('carol@example.com'),
      PASSWORD,
    );
    const carolId = await userIdOf(db, 'carol@example.com');
    const carolMember = await memberIdOf(db, workspaceId, 'carol@example.com');
    const left = await recordedIn(db, workspaceId, async () => {
      await carol.get(members);
      assert.equal((await carol.post(`${members}/leave`, {})).status, 303);
    });
    assert.deepEqual(left, [
      [
        'member.left',
        'carol@example.com',
        carolId,
        { type: 'member', id: carolMember, label: 'carol@example.com (member)' },
      ],
    ]);

    const bob = webClient(fixture.runtime.app);
    await bob.get('/sign-in');
    assert.equal((await bob.post('/sign-in', { email: 'bob@example.com', password: PASSWORD })).status, 303);
    const removed = await recordedIn(db, workspaceId, async () => {
      await bob.get(members);
      assert.equal((await bob.post(`${members}/${adaMember}/remove`, {})).status, 303);
    });
    assert.deepEqual(removed, [
      [
        'member.removed',
        'bob@example.com',
        bobId,
        { type: 'member', id: adaMember, label: 'ada@example.com (admin)' },
      ],
    ]);

    const refused = await recordedIn(db, workspaceId, async () => {
      assert.equal((await bob.post(`${members}/leave`, {})).status, 409, 'the last owner stays');
    });
    assert.deepEqual(refused, [], 'a refused change records nothing');
  });

  it('records password, address and passkey changes and every way of signing in, once in each workspace of the account', async (t) => {
    const fixture = await startAppFixture(t);
    const db = fixture.runtime.database.db;
    const first = await fixture.provision({ email: 'ada@example.com', name: 'First' });
    const client = await acceptAsNewAccount(fixture.runtime.app, first.invitationPath, PASSWORD);
    const second = await fixture.provision({ email: 'ada@example.com', name: 'Second' });
    await client.get(second.invitationPath);
    assert.equal((await client.post(`${second.invitationPath}/accept`, {})).status, 303);
    const workspaces = [first.workspaceId, second.workspaceId];
    const adaId = await userIdOf(db, 'ada@example.com');
    const account = (label = 'ada@example.com') => ({ type: 'user', id: adaId, label });
    const byAda = (action: string, target = account(), label = 'ada@example.com'): Row => [
      action,
      label,
      adaId,
      target,
    ];
    const inEach = (...rows: Row[]) => workspaces.map(() => rows);

    await client.get('/account');
    assert.deepEqual(
      await recordedBy(db, workspaces, async () => {
        const answer = await client.post('/account/password', {
          current_password: PASSWORD,
          new_password: NEW_PASSWORD,
        });
        assert.equal(answer.status, 303);
      }),
      inEach(byAda('account.password_changed'), byAda('account.signed_in')),
      'the new password, then the new session',
    );

    await client.get('/account');
    const move = account('ada@example.com → ada@new.example');
    assert.deepEqual(
      await recordedBy(db, workspaces, async () => {
        const answer = await client.post('/account/email', {
          password: NEW_PASSWORD,
          new_email: 'ada@new.example',
        });
        assert.equal(answer.status, 200);
      }),
      inEach(byAda('account.email_change_requested', move)),
    );
    await fixture.runtime.jobs.drain();
    const confirmPath = sentLinkPath(fixture, 'ada@new.example', EMAIL_CHANGE_LINK);
    await client.get(confirmPath);
    assert.deepEqual(
      await recordedBy(db, workspaces, async () => {
        assert.equal((await client.post(confirmPath, {})).status, 200);
      }),
      inEach(byAda('account.email_changed', move)),
      'by the account as it was known until then',
    );

    const visitor = webClient(fixture.runtime.app);
    await visitor.get('/password-reset');
    assert.equal((await visitor.post('/password-reset', { email: 'ada@new.example' })).status, 200);
    await fixture.runtime.jobs.drain();
    const resetPath = sentLinkPath(fixture, 'ada@new.example', RESET_LINK);
    await visitor.get(resetPath);
    const atNewAddress = (action: string, target = account('ada@new.example')) =>
      byAda(action, target, 'ada@new.example');
    assert.deepEqual(
      await recordedBy(db, workspaces, async () => {
        assert.equal((await visitor.post(resetPath, { password: PASSWORD })).status, 303);
      }),
      inEach(atNewAddress('account.password_reset'), atNewAddress('account.signed_in')),
    );

    const linkVisitor = webClient(fixture.runtime.app);
    await linkVisitor.get('/sign-in/email');
    assert.equal((await linkVisitor.post('/sign-in/email', { email: 'ada@new.example' })).status, 200);
    await fixture.runtime.jobs.drain();
    const signInPath = sentLinkPath(fixture, 'ada@new.example', SIGN_IN_LINK);
    await linkVisitor.get(signInPath);
    assert.deepEqual(
      await recordedBy(db, workspaces, async () => {
        assert.equal((await linkVisitor.post(signInPath, {})).status, 303);
      }),
      inEach(atNewAddress('account.signed_in')),
      'an emailed link signs in like a password',
    );

    const authenticator = new SoftAuthenticator();
    await linkVisitor.get('/account/passkeys');
    const registration = JSON.parse((await linkVisitor.post('/account/passkeys/options', {})).body);
    const added = await recordedBy(db, workspaces, async () => {
      const answer = await linkVisitor.post('/account/passkeys', {
        name: 'Laptop',
        response: authenticator.register(registration, ORIGIN),
      });
      assert.equal(answer.status, 303, answer.body);
    });
    const passkey = await db.selectFrom('passkeys').select('id').executeTakeFirstOrThrow();
    const laptop = { type: 'passkey', id: passkey.id, label: 'Laptop' };
    assert.deepEqual(added, inEach(atNewAddress('passkey.added', laptop)));

    const passkeyVisitor = webClient(fixture.runtime.app);
    await passkeyVisitor.get('/sign-in');
    const signIn = async (origin: string) => {
      const options = JSON.parse((await passkeyVisitor.post('/sign-in/passkey/options', {})).body);
      return passkeyVisitor.post('/sign-in/passkey', { response: authenticator.assert(options, origin) });
    };
    assert.deepEqual(
      await recordedBy(db, workspaces, async () => {
        assert.equal((await signIn('https://svc.test.evil.example')).status, 401);
      }),
      inEach(['account.sign_in_failed', 'Unknown', null, account('ada@new.example')]),
      'a passkey that fails its check is a failed sign-in of its account',
    );
    assert.deepEqual(
      await recordedBy(db, workspaces, async () => {
        assert.equal((await signIn(ORIGIN)).status, 303);
      }),
      inEach(atNewAddress('account.signed_in')),
    );

    await passkeyVisitor.get(`/account/passkeys/${passkey.id}/remove`);
    assert.deepEqual(
      await recordedBy(db, workspaces, async () => {
        const removed = await passkeyVisitor.post(`/account/passkeys/${passkey.id}/remove`, {});
        assert.equal(removed.status, 303);
      }),
      inEach(atNewAddress('passkey.removed', laptop)),
    );
  });

  it('records a password reset in the transaction of the reset: rolled back, neither remains', async (t) => {
    const fixture = await startAppFixture(t);
    const db = fixture.runtime.database.db;
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
    const visitor = webClient(fixture.runtime.app);
    await visitor.get('/password-reset');
    await visitor.post('/password-reset', { email: 'ada@example.com' });
    await fixture.runtime.jobs.drain();
    const token = sentLinkPath(fixture, 'ada@example.com', RESET_LINK).split('/').at(-1) ?? '';
    const record: RecordAccountChange = (trx, change) =>
      recordAuditEvent(trx, {
        workspaceId,
        action: change.action,
        actor: { userId: change.account.id, label: change.account.email },
        at: fixture.runtime.clock.now(),
      });
    const hashBefore = await db.selectFrom('users').select('password_hash').executeTakeFirstOrThrow();
    await db.deleteFrom('audit_events').execute();

    await rolledBack(db, (trx) =>
      resetPasswordWithLink(
        { db: trx, clock: fixture.runtime.clock },
        { token, password: NEW_PASSWORD },
        record,
      ),
    );
    assert.deepEqual(await eventsOf(db, workspaceId), []);
    assert.deepEqual(
      await db.selectFrom('users').select('password_hash').executeTakeFirstOrThrow(),
      hashBefore,
    );

    const reset = await resetPasswordWithLink(
      { db, clock: fixture.runtime.clock },
      { token, password: NEW_PASSWORD },
      record,
    );
    assert.ok(reset.ok, 'the link still works: its use was rolled back too');
    assert.deepEqual(
      (await eventsOf(db, workspaceId)).map((e) => e.action),
      ['account.password_reset'],
    );
  });
});
