// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createUser, findUserByEmail } from '../../src/accounts/index.ts';
import { INVITATION_HOLDER } from '../../src/audit/index.ts';
import type { Db } from '../../src/db/schema.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { DAY_MS } from '../../src/shared/clock.ts';
import {
  acceptInvitation,
  addPaidTerm,
  changeMemberRole,
  findInvitation,
  findMembership,
  inviteMember,
  leaveWorkspace,
  listMembers,
  listOpenInvitations,
  type MemberRole,
  memberAddressChanged,
  provisionWorkspace,
  removeMember,
  resendInvitation,
  resendMemberInvitation,
  revokeMemberInvitation,
  transferOwnership,
} from '../../src/workspace/index.ts';
import { testDialect } from '../helpers/database.ts';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.ts';

const SOURCE = { actor: { label: 'Tester' } };
const INVITATION_TOKEN = /\/invitations\/(inv_[A-Za-z0-9_-]{43})/;

/** The link of the newest invitation email to the address, read from the outbox before it is sent. */
async function tokenSentTo(runtime: TestRuntime, email: string): Promise<string> {
  const mail = await runtime.database.db
    .selectFrom('mail_messages')
    .select(['text_body', 'template'])
    .where('to_address', '=', email)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirst();
  const token = mail?.text_body?.match(INVITATION_TOKEN)?.[1];
  assert.ok(token, `no invitation emailed to ${email}`);
  return token;
}

async function accountOf(runtime: TestRuntime, email: string): Promise<string> {
  const existing = await findUserByEmail(runtime.database.db, email);
  if (existing) return existing.id;
  const created = await createUser(runtime.database.db, runtime.clock, { email, passwordHash: null });
  assert.ok(created.ok);
  return created.value.id;
}

/** The address accepts the newest invitation it was sent; answers its account id. */
async function accept(runtime: TestRuntime, email: string): Promise<string> {
  const token = await tokenSentTo(runtime, email);
  const userId = await accountOf(runtime, email);
  const accepted = await inTransaction(runtime.database.db, (trx) =>
    acceptInvitation(trx, runtime, { token, userId }, { actor: INVITATION_HOLDER }),
  );
  assert.deepEqual(accepted.ok, true, JSON.stringify(accepted));
  return userId;
}

/** The account's address changes, as a confirmed change on the Account page does it. */
async function changeAddress(runtime: TestRuntime, userId: string, email: string): Promise<void> {
  await inTransaction(runtime.database.db, async (trx) => {
    await trx.updateTable('users').set({ email, email_key: email }).where('id', '=', userId).execute();
    await memberAddressChanged(trx, userId, email);
  });
}

function ctxOf(runtime: TestRuntime) {
  return { clock: runtime.clock, baseUrl: runtime.config.baseUrl };
}

let orders = 0;
async function workspaceWithOwner(runtime: TestRuntime, ownerEmail = 'owner@example.com') {
  const { workspace } = await inTransaction(runtime.database.db, (trx) =>
    provisionWorkspace(
      trx,
      {
        name: 'Acme',
        plan: 'pro',
        ownerEmail,
        term: { term: 'year', startsAt: runtime.clock.now(), channel: 'acp', orderId: `ord_m_${++orders}` },
      },
      ctxOf(runtime),
    ),
  );
  return { workspaceId: workspace.id, ownerId: await accept(runtime, ownerEmail) };
}

/** `actorUserId` invites the address with the role and it accepts; answers its account and member ids. */
async function addMember(
  runtime: TestRuntime,
  workspaceId: string,
  actorUserId: string,
  email: string,
  role: MemberRole,
) {
  const invited = await inviteMember(
    runtime.database.db,
    ctxOf(runtime),
    {
      workspaceId,
      actorUserId,
      email,
      role,
    },
    SOURCE,
  );
  assert.equal(invited.ok, true, JSON.stringify(invited));
  const userId = await accept(runtime, email);
  return { userId, memberId: await memberIdOf(runtime.database.db, workspaceId, userId) };
}

async function memberIdOf(db: Db, workspaceId: string, userId: string): Promise<string> {
  const row = await db
    .selectFrom('workspace_members')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return row.id;
}

async function roleOf(runtime: TestRuntime, workspaceId: string, userId: string) {
  return (await findMembership(runtime.database.db, workspaceId, userId))?.role;
}

async function ownerCount(db: Db, workspaceId: string): Promise<number> {
  const owners = await db
    .selectFrom('workspace_members')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('role', '=', 'owner')
    .execute();
  return owners.length;
}

describe(`workspace members on ${testDialect}`, () => {
  it('lets an owner invite an admin by email through the owner invitation flow: one use, 7 days, hashed', async (t) => {
    const runtime = await startTestRuntime(t);
    const { workspaceId, ownerId } = await workspaceWithOwner(runtime);
    const invited = await inviteMember(
      runtime.database.db,
      ctxOf(runtime),
      {
        workspaceId,
        actorUserId: ownerId,
        email: '  Grace@Example.com ',
        role: 'admin',
      },
      SOURCE,
    );
    assert.deepEqual(invited, { ok: true, value: { email: 'Grace@Example.com' } });

    const mail = await runtime.database.db
      .selectFrom('mail_messages')
      .selectAll()
      .where('to_address', '=', 'Grace@Example.com')
      .executeTakeFirstOrThrow();
    assert.equal(mail.template, 'team_invitation');
    assert.match(mail.text_body ?? '', /join the compliance workspace "Acme" as admin/);
    const token = await tokenSentTo(runtime, 'Grace@Example.com');
    const row = await runtime.database.db
      .selectFrom('workspace_invitations')
      .selectAll()
      .where('email', '=', 'Grace@Example.com')
      .executeTakeFirstOrThrow();
    assert.notEqual(row.token_hash, token);
    assert.equal(row.invited_by_user_id, ownerId);
    assert.equal(row.expires_at - runtime.clock.now().getTime(), 7 * DAY_MS);

    const [open] = await listOpenInvitations(runtime.database.db, runtime.clock.now(), workspaceId);
    assert.equal(open?.email, 'Grace@Example.com');
    assert.equal(open?.role, 'admin');
    assert.equal(open?.state, 'pending');
    assert.equal(open?.invitedByUserId, ownerId);

    const graceId = await accept(runtime, 'Grace@Example.com');
    assert.equal(await roleOf(runtime, workspaceId, graceId), 'admin');
    assert.deepEqual(await listOpenInvitations(runtime.database.db, runtime.clock.now(), workspaceId), []);
    const members = await listMembers(runtime.database.db, workspaceId);
    assert.deepEqual(
      members.map((member) => [member.email, member.role, member.joinedAt.toISOString()]),
      [
        ['owner@example.com', 'owner', '2026-03-01T12:00:00.000Z'],
        ['Grace@Example.com', 'admin', '2026-03-01T12:00:00.000Z'],
      ],
    );
    const again = await inTransaction(runtime.database.db, (trx) =>
      acceptInvitation(trx, runtime, { token, userId: graceId }, { actor: INVITATION_HOLDER }),
    );
    assert.deepEqual(again, { ok: false, error: 'accepted' });
  });

  it('lets admins invite admins and members but not owners, and members invite nobody', async (t) => {
    const runtime = await startTestRuntime(t);
    const db = runtime.database.db;
    const { workspaceId, ownerId } = await workspaceWithOwner(runtime);
    const admin = await addMember(runtime, workspaceId, ownerId, 'admin@example.com', 'admin');
    const member = await addMember(runtime, workspaceId, admin.userId, 'member@example.com', 'member');
    const invite = (actorUserId: string, email: string, role: MemberRole) =>
      inviteMember(db, ctxOf(runtime), { workspaceId, actorUserId, email, role }, SOURCE);

    assert.equal((await invite(admin.userId, 'second-admin@example.com', 'admin')).ok, true);
    assert.deepEqual(await invite(admin.userId, 'boss@example.com', 'owner'), {
      ok: false,
      error: { code: 'forbidden' },
    });
    assert.deepEqual(await invite(member.userId, 'friend@example.com', 'member'), {
      ok: false,
      error: { code: 'forbidden' },
    });
    assert.equal((await invite(ownerId, 'co-owner@example.com', 'owner')).ok, true);
    const stranger = await accountOf(runtime, 'stranger@example.com');
    assert.deepEqual(await invite(stranger, 'x@example.com', 'member'), {
      ok: false,
      error: { code: 'not_member' },
    });
  });

  it('refuses an address that is not one and an address that is already a member, in any case', async (t) => {
    const runtime = await startTestRuntime(t);
    const { workspaceId, ownerId } = await workspaceWithOwner(runtime);
    const invite = (email: string) =>
      inviteMember(
        runtime.database.db,
        ctxOf(runtime),
        {
          workspaceId,
          actorUserId: ownerId,
          email,
          role: 'member',
        },
        SOURCE,
      );
    assert.deepEqual(await invite('not an address'), { ok: false, error: { code: 'invalid_email' } });
    assert.deepEqual(await invite('<script>@example.com'), { ok: false, error: { code: 'invalid_email' } });
    assert.deepEqual(await invite('OWNER@example.com'), { ok: false, error: { code: 'already_member' } });
  });

  it("moves members to their account's new address: the new one is a member, the old one is free for whoever holds it, and no account is a member twice", async (t) => {
    const runtime = await startTestRuntime(t);
    const db = runtime.database.db;
    const { workspaceId, ownerId } = await workspaceWithOwner(runtime, 'bob@example.com');
    await changeAddress(runtime, ownerId, 'bob2@example.com');
    const invite = (email: string, role: MemberRole = 'member') =>
      inviteMember(db, ctxOf(runtime), { workspaceId, actorUserId: ownerId, email, role }, SOURCE);
    assert.deepEqual(await invite('BOB2@example.com'), { ok: false, error: { code: 'already_member' } });

    // The old address now belongs to someone else, who is invited and joins as themselves.
    assert.equal((await invite('bob@example.com')).ok, true);
    const newcomerId = await accept(runtime, 'bob@example.com');
    assert.notEqual(newcomerId, ownerId);
    assert.equal(await roleOf(runtime, workspaceId, ownerId), 'owner', 'Bob keeps his membership');
    assert.equal(await roleOf(runtime, workspaceId, newcomerId), 'member');
    assert.deepEqual(
      (await listMembers(db, workspaceId)).map((member) => [member.email, member.role]).sort(),
      [
        ['bob2@example.com', 'owner'],
        ['bob@example.com', 'member'],
      ],
    );

    // An account already in the workspace that uses an invitation to another address of its own
    // stays one member with its role.
    assert.equal((await invite('bob.alias@example.com', 'admin')).ok, true);
    const token = await tokenSentTo(runtime, 'bob.alias@example.com');
    const used = await inTransaction(db, (trx) =>
      acceptInvitation(trx, runtime, { token, userId: ownerId }, { actor: INVITATION_HOLDER }),
    );
    assert.deepEqual(used, { ok: true, value: { workspaceId, role: 'owner' } });
    const bobs = await db
      .selectFrom('workspace_members')
      .select('role')
      .where('user_id', '=', ownerId)
      .execute();
    assert.deepEqual(bobs, [{ role: 'owner' }]);
  });

  it('lets addresses pass from one member to another, and removing the former holder leaves the new invitation alone', async (t) => {
    const runtime = await startTestRuntime(t);
    const db = runtime.database.db;
    const { workspaceId, ownerId } = await workspaceWithOwner(runtime);
    const bob = await addMember(runtime, workspaceId, ownerId, 'bob@example.com', 'member');
    const alice = await addMember(runtime, workspaceId, ownerId, 'alice@example.com', 'member');
    await changeAddress(runtime, bob.userId, 'bob2@example.com');
    await changeAddress(runtime, alice.userId, 'bob@example.com');
    const invite = (email: string) =>
      inviteMember(db, ctxOf(runtime), { workspaceId, actorUserId: ownerId, email, role: 'member' }, SOURCE);
    assert.equal((await invite('alice@example.com')).ok, true);
    const token = await tokenSentTo(runtime, 'alice@example.com');

    const removed = await removeMember(
      db,
      ctxOf(runtime),
      { workspaceId, actorUserId: ownerId, memberId: alice.memberId },
      SOURCE,
    );
    assert.equal(removed.ok, true);
    assert.equal(
      (await findInvitation(db, runtime, token))?.status,
      'pending',
      "the newcomer's invitation stands",
    );
    const newcomerId = await accept(runtime, 'alice@example.com');
    assert.deepEqual((await listMembers(db, workspaceId)).map((member) => member.email).sort(), [
      'alice@example.com',
      'bob2@example.com',
      'owner@example.com',
    ]);
    assert.equal(await roleOf(runtime, workspaceId, newcomerId), 'member');
  });

  it('never fails an address change on rows from before addresses followed: a chain of them, or one without an account, keeps its address', async (t) => {
    const runtime = await startTestRuntime(t);
    const db = runtime.database.db;
    const { workspaceId, ownerId } = await workspaceWithOwner(runtime);
    const bob = await addMember(runtime, workspaceId, ownerId, 'bob@example.com', 'member');
    const carol = await addMember(runtime, workspaceId, ownerId, 'carol@example.com', 'member');
    const alice = await addMember(runtime, workspaceId, ownerId, 'alice@example.com', 'member');
    // Changes made before memberships followed addresses: the rows keep the old ones.
    const before = (userId: string, email: string) =>
      db.updateTable('users').set({ email, email_key: email }).where('id', '=', userId).execute();
    await before(carol.userId, 'carol2@example.com');
    await before(bob.userId, 'carol@example.com');
    await db
      .insertInto('workspace_members')
      .values({
        id: 'member_without_account',
        workspace_id: workspaceId,
        email: 'legacy@example.com',
        role: 'member',
        user_id: null,
        created_at: runtime.clock.now().getTime(),
      })
      .execute();

    await changeAddress(runtime, alice.userId, 'bob@example.com');
    await changeAddress(runtime, alice.userId, 'legacy@example.com');
    assert.equal((await listMembers(db, workspaceId)).length, 5, 'everyone once');
    assert.equal(await roleOf(runtime, workspaceId, alice.userId), 'member');
  });

  it('states in a resent owner invitation the end of the last term paid, a next term bought on Billing included', async (t) => {
    const runtime = await startTestRuntime(t);
    const db = runtime.database.db;
    const { workspace } = await inTransaction(db, (trx) =>
      provisionWorkspace(
        trx,
        {
          name: 'Acme',
          plan: 'pro',
          ownerEmail: 'late@example.com',
          term: {
            term: 'month',
            startsAt: runtime.clock.now(),
            channel: 'acp',
            orderId: `ord_m_${++orders}`,
          },
        },
        ctxOf(runtime),
      ),
    );
    const next = await inTransaction(db, (trx) =>
      addPaidTerm(
        trx,
        {
          workspaceId: workspace.id,
          plan: 'pro',
          term: 'year',
          channel: 'app',
          orderId: `ord_m_${++orders}`,
          at: runtime.clock.now(),
        },
        ctxOf(runtime),
      ),
    );
    const token = await tokenSentTo(runtime, 'late@example.com');
    runtime.clock.advance(7 * DAY_MS);
    assert.equal((await resendInvitation(db, ctxOf(runtime), token, { actor: INVITATION_HOLDER })).ok, true);
    const resent = await db
      .selectFrom('mail_messages')
      .select('text_body')
      .where('to_address', '=', 'late@example.com')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    const lastDay = new Intl.DateTimeFormat('en-US', { dateStyle: 'long', timeZone: 'UTC' }).format(
      next.term.endsAt,
    );
    assert.match(resent.text_body ?? '', new RegExp(`prepaid until ${lastDay} \\(UTC\\)`));
  });

  it('resends an invitation with a new link and revokes one for good: neither link nor a fresh-link request brings it back', async (t) => {
    const runtime = await startTestRuntime(t);
    const db = runtime.database.db;
    const { workspaceId, ownerId } = await workspaceWithOwner(runtime);
    await inviteMember(
      db,
      ctxOf(runtime),
      {
        workspaceId,
        actorUserId: ownerId,
        email: 'ann@example.com',
        role: 'member',
      },
      SOURCE,
    );
    const first = await tokenSentTo(runtime, 'ann@example.com');
    const [invitation] = await listOpenInvitations(db, runtime.clock.now(), workspaceId);
    assert.ok(invitation);

    const resent = await resendMemberInvitation(
      db,
      ctxOf(runtime),
      {
        workspaceId,
        actorUserId: ownerId,
        invitationId: invitation.id,
      },
      SOURCE,
    );
    assert.equal(resent.ok, true);
    const second = await tokenSentTo(runtime, 'ann@example.com');
    assert.notEqual(second, first);
    assert.equal((await findInvitation(db, runtime, first))?.status, 'revoked');
    const [current] = await listOpenInvitations(db, runtime.clock.now(), workspaceId);
    assert.ok(current && current.id !== invitation.id);

    const revoked = await revokeMemberInvitation(
      db,
      ctxOf(runtime),
      {
        workspaceId,
        actorUserId: ownerId,
        invitationId: current.id,
      },
      SOURCE,
    );
    assert.deepEqual(revoked, { ok: true, value: { email: 'ann@example.com' } });
    assert.deepEqual(await listOpenInvitations(db, runtime.clock.now(), workspaceId), []);
    for (const token of [first, second]) {
      assert.equal((await findInvitation(db, runtime, token))?.status, 'withdrawn');
      assert.deepEqual(await resendInvitation(db, ctxOf(runtime), token, { actor: INVITATION_HOLDER }), {
        ok: false,
        error: { code: 'withdrawn' },
      });
    }
    const userId = await accountOf(runtime, 'ann@example.com');
    const accepted = await inTransaction(db, (trx) =>
      acceptInvitation(trx, runtime, { token: second, userId }, { actor: INVITATION_HOLDER }),
    );
    assert.deepEqual(accepted, { ok: false, error: 'withdrawn' });
    assert.equal(await roleOf(runtime, workspaceId, userId), undefined);

    assert.deepEqual(
      await revokeMemberInvitation(
        db,
        ctxOf(runtime),
        {
          workspaceId,
          actorUserId: ownerId,
          invitationId: current.id,
        },
        SOURCE,
      ),
      { ok: false, error: { code: 'not_found' } },
    );
  });

  it('keeps admins off owner invitations and limits invitations to one address to 3 an hour', async (t) => {
    const runtime = await startTestRuntime(t);
    const db = runtime.database.db;
    const { workspaceId, ownerId } = await workspaceWithOwner(runtime);
    const admin = await addMember(runtime, workspaceId, ownerId, 'admin@example.com', 'admin');
    await inviteMember(
      db,
      ctxOf(runtime),
      {
        workspaceId,
        actorUserId: ownerId,
        email: 'co@example.com',
        role: 'owner',
      },
      SOURCE,
    );
    const [ownerInvitation] = await listOpenInvitations(db, runtime.clock.now(), workspaceId);
    assert.ok(ownerInvitation);
    const asAdmin = { workspaceId, actorUserId: admin.userId, invitationId: ownerInvitation.id };
    assert.deepEqual(await resendMemberInvitation(db, ctxOf(runtime), asAdmin, SOURCE), {
      ok: false,
      error: { code: 'forbidden' },
    });
    assert.deepEqual(await revokeMemberInvitation(db, ctxOf(runtime), asAdmin, SOURCE), {
      ok: false,
      error: { code: 'forbidden' },
    });

    const invite = () =>
      inviteMember(
        db,
        ctxOf(runtime),
        {
          workspaceId,
          actorUserId: ownerId,
          email: 'busy@example.com',
          role: 'member',
        },
        SOURCE,
      );
    assert.equal((await invite()).ok, true);
    assert.equal((await invite()).ok, true);
    assert.equal((await invite()).ok, true);
    const fourth = await invite();
    assert.equal(!fourth.ok && fourth.error.code, 'too_many');
  });

  it('changes roles: owners any role, admins never owners and never to owner', async (t) => {
    const runtime = await startTestRuntime(t);
    const db = runtime.database.db;
    const { workspaceId, ownerId } = await workspaceWithOwner(runtime);
    const ownerMemberId = await memberIdOf(db, workspaceId, ownerId);
    const admin = await addMember(runtime, workspaceId, ownerId, 'admin@example.com', 'admin');
    const other = await addMember(runtime, workspaceId, ownerId, 'other@example.com', 'admin');
    const member = await addMember(runtime, workspaceId, ownerId, 'member@example.com', 'member');
    const change = (actorUserId: string, memberId: string, role: MemberRole) =>
      changeMemberRole(db, ctxOf(runtime), { workspaceId, actorUserId, memberId, role }, SOURCE);

    assert.deepEqual(await change(ownerId, admin.memberId, 'member'), {
      ok: true,
      value: { memberId: admin.memberId, email: 'admin@example.com', from: 'admin', to: 'member' },
    });
    assert.equal(await roleOf(runtime, workspaceId, admin.userId), 'member');
    assert.deepEqual(await change(admin.userId, member.memberId, 'admin'), {
      ok: false,
      error: { code: 'forbidden' },
    });
    assert.equal((await change(other.userId, member.memberId, 'admin')).ok, true, 'admins promote members');
    assert.equal((await change(other.userId, member.memberId, 'member')).ok, true, 'and demote admins');
    assert.deepEqual(await change(other.userId, ownerMemberId, 'admin'), {
      ok: false,
      error: { code: 'forbidden' },
    });
    assert.deepEqual(await change(other.userId, member.memberId, 'owner'), {
      ok: false,
      error: { code: 'forbidden' },
    });
    assert.deepEqual(await change(other.userId, other.memberId, 'owner'), {
      ok: false,
      error: { code: 'forbidden' },
    });
    assert.equal(await roleOf(runtime, workspaceId, ownerId), 'owner');
    assert.equal((await change(ownerId, member.memberId, 'owner')).ok, true, 'owners make owners');
    assert.equal(await roleOf(runtime, workspaceId, member.userId), 'owner');
    assert.deepEqual(await change(ownerId, 'member_nope', 'admin'), {
      ok: false,
      error: { code: 'not_found' },
    });
  });

  it('never lets the last owner be demoted, removed or leave; a second owner can step down or leave', async (t) => {
    const runtime = await startTestRuntime(t);
    const db = runtime.database.db;
    const { workspaceId, ownerId } = await workspaceWithOwner(runtime);
    const ownerMemberId = await memberIdOf(db, workspaceId, ownerId);
    const lastOwner = { ok: false, error: { code: 'last_owner' } };
    assert.deepEqual(
      await changeMemberRole(
        db,
        ctxOf(runtime),
        {
          workspaceId,
          actorUserId: ownerId,
          memberId: ownerMemberId,
          role: 'admin',
        },
        SOURCE,
      ),
      lastOwner,
    );
    assert.deepEqual(
      await removeMember(
        db,
        ctxOf(runtime),
        { workspaceId, actorUserId: ownerId, memberId: ownerMemberId },
        SOURCE,
      ),
      lastOwner,
    );
    assert.deepEqual(
      await leaveWorkspace(db, ctxOf(runtime), { workspaceId, userId: ownerId }, SOURCE),
      lastOwner,
    );
    assert.equal(await roleOf(runtime, workspaceId, ownerId), 'owner');

    const second = await addMember(runtime, workspaceId, ownerId, 'second@example.com', 'owner');
    assert.equal(
      (
        await changeMemberRole(
          db,
          ctxOf(runtime),
          {
            workspaceId,
            actorUserId: ownerId,
            memberId: ownerMemberId,
            role: 'admin',
          },
          SOURCE,
        )
      ).ok,
      true,
    );
    assert.deepEqual(
      await leaveWorkspace(db, ctxOf(runtime), { workspaceId, userId: second.userId }, SOURCE),
      lastOwner,
    );
    assert.equal(await ownerCount(db, workspaceId), 1);
  });

  it('removes a member at once and withdraws their links, so an old link cannot bring them back', async (t) => {
    const runtime = await startTestRuntime(t);
    const db = runtime.database.db;
    const { workspaceId, ownerId } = await workspaceWithOwner(runtime);
    const admin = await addMember(runtime, workspaceId, ownerId, 'admin@example.com', 'admin');
    const token = await tokenSentTo(runtime, 'admin@example.com');
    const member = await addMember(runtime, workspaceId, ownerId, 'member@example.com', 'member');
    const ownerMemberId = await memberIdOf(db, workspaceId, ownerId);

    assert.deepEqual(
      await removeMember(
        db,
        ctxOf(runtime),
        {
          workspaceId,
          actorUserId: admin.userId,
          memberId: ownerMemberId,
        },
        SOURCE,
      ),
      { ok: false, error: { code: 'forbidden' } },
      'admins cannot remove owners',
    );
    assert.deepEqual(
      await removeMember(
        db,
        ctxOf(runtime),
        {
          workspaceId,
          actorUserId: member.userId,
          memberId: admin.memberId,
        },
        SOURCE,
      ),
      { ok: false, error: { code: 'forbidden' } },
      'members remove nobody',
    );
    assert.deepEqual(
      await removeMember(
        db,
        ctxOf(runtime),
        { workspaceId, actorUserId: ownerId, memberId: admin.memberId },
        SOURCE,
      ),
      { ok: true, value: { memberId: admin.memberId, email: 'admin@example.com', role: 'admin' } },
    );
    assert.equal(await findMembership(db, workspaceId, admin.userId), undefined);
    assert.equal((await findInvitation(db, runtime, token))?.status, 'withdrawn');
    assert.deepEqual(await resendInvitation(db, ctxOf(runtime), token, { actor: INVITATION_HOLDER }), {
      ok: false,
      error: { code: 'withdrawn' },
    });
    assert.deepEqual(
      await removeMember(
        db,
        ctxOf(runtime),
        {
          workspaceId,
          actorUserId: admin.userId,
          memberId: member.memberId,
        },
        SOURCE,
      ),
      { ok: false, error: { code: 'not_member' } },
      'a removed admin manages nothing',
    );

    const left = await leaveWorkspace(db, ctxOf(runtime), { workspaceId, userId: member.userId }, SOURCE);
    assert.equal(left.ok, true);
    assert.equal(await findMembership(db, workspaceId, member.userId), undefined);
    assert.deepEqual(
      (await listMembers(db, workspaceId)).map((m) => m.email),
      ['owner@example.com'],
    );

    const back = await inviteMember(
      db,
      ctxOf(runtime),
      {
        workspaceId,
        actorUserId: ownerId,
        email: 'admin@example.com',
        role: 'member',
      },
      SOURCE,
    );
    assert.equal(back.ok, true, 'an owner can invite a removed member again');
    await accept(runtime, 'admin@example.com');
    assert.equal(await roleOf(runtime, workspaceId, admin.userId), 'member');
  });

  it('transfers ownership in one step: the new owner in, the old owner down to admin', async (t) => {
    const runtime = await startTestRuntime(t);
    const db = runtime.database.db;
    const { workspaceId, ownerId } = await workspaceWithOwner(runtime);
    const admin = await addMember(runtime, workspaceId, ownerId, 'admin@example.com', 'admin');
    const member = await addMember(runtime, workspaceId, ownerId, 'member@example.com', 'member');

    assert.deepEqual(
      await transferOwnership(
        db,
        ctxOf(runtime),
        {
          workspaceId,
          actorUserId: admin.userId,
          memberId: member.memberId,
          stepDown: false,
        },
        SOURCE,
      ),
      { ok: false, error: { code: 'forbidden' } },
      'only owners transfer ownership',
    );
    const transferred = await transferOwnership(
      db,
      ctxOf(runtime),
      {
        workspaceId,
        actorUserId: ownerId,
        memberId: member.memberId,
        stepDown: true,
      },
      SOURCE,
    );
    assert.equal(transferred.ok, true);
    assert.equal(await roleOf(runtime, workspaceId, member.userId), 'owner');
    assert.equal(await roleOf(runtime, workspaceId, ownerId), 'admin');
    assert.equal(await ownerCount(db, workspaceId), 1);

    assert.deepEqual(
      await transferOwnership(
        db,
        ctxOf(runtime),
        {
          workspaceId,
          actorUserId: ownerId,
          memberId: admin.memberId,
          stepDown: true,
        },
        SOURCE,
      ),
      { ok: false, error: { code: 'forbidden' } },
      'the former owner no longer can',
    );
    assert.deepEqual(
      await transferOwnership(
        db,
        ctxOf(runtime),
        {
          workspaceId,
          actorUserId: member.userId,
          memberId: await memberIdOf(db, workspaceId, member.userId),
          stepDown: false,
        },
        SOURCE,
      ),
      { ok: false, error: { code: 'already_owner' } },
    );
    assert.equal(
      (
        await transferOwnership(
          db,
          ctxOf(runtime),
          {
            workspaceId,
            actorUserId: member.userId,
            memberId: admin.memberId,
            stepDown: false,
          },
          SOURCE,
        )
      ).ok,
      true,
    );
    assert.equal(await ownerCount(db, workspaceId), 2);
  });

  it('keeps an owner when the last two owners demote, remove or leave at the same moment, from two instances', async (t) => {
    const runtime = await startTestRuntime(t);
    // PostgreSQL: a second pool, as a second instance of the service has. SQLite: node:sqlite
    // waits for a lock synchronously, so two handles in one process would deadlock; the one
    // handle runs the two transactions interleaved on its connection queue instead.
    const instance = testDialect === 'postgres' ? runtime.database.reopen() : undefined;
    if (instance) t.after(() => instance.close());
    const dbs = [runtime.database.db, instance?.db ?? runtime.database.db];

    const races: [
      string,
      (a: { userId: string; memberId: string }, b: typeof a, ws: string, db: Db) => Promise<{ ok: boolean }>,
    ][] = [
      [
        'each demotes the other',
        (a, b, workspaceId, db) =>
          changeMemberRole(
            db,
            ctxOf(runtime),
            { workspaceId, actorUserId: a.userId, memberId: b.memberId, role: 'admin' },
            SOURCE,
          ),
      ],
      [
        'each demotes themselves',
        (a, _b, workspaceId, db) =>
          changeMemberRole(
            db,
            ctxOf(runtime),
            { workspaceId, actorUserId: a.userId, memberId: a.memberId, role: 'member' },
            SOURCE,
          ),
      ],
      [
        'each removes the other',
        (a, b, workspaceId, db) =>
          removeMember(
            db,
            ctxOf(runtime),
            { workspaceId, actorUserId: a.userId, memberId: b.memberId },
            SOURCE,
          ),
      ],
      [
        'each leaves',
        (a, _b, workspaceId, db) =>
          leaveWorkspace(db, ctxOf(runtime), { workspaceId, userId: a.userId }, SOURCE),
      ],
    ];
    for (const [name, race] of races) {
      for (let round = 0; round < 5; round++) {
        const { workspaceId, ownerId } = await workspaceWithOwner(runtime, `first-${orders}@example.com`);
        const first = {
          userId: ownerId,
          memberId: await memberIdOf(runtime.database.db, workspaceId, ownerId),
        };
        const second = await addMember(
          runtime,
          workspaceId,
          ownerId,
          `second-${orders}@example.com`,
          'owner',
        );
        const [one, two] = dbs as [Db, Db];
        const results = await Promise.all([
          race(first, second, workspaceId, one),
          race(second, first, workspaceId, two),
        ]);
        assert.deepEqual(
          results.map((result) => result.ok).sort(),
          [false, true],
          `${name}: exactly one succeeds (round ${round})`,
        );
        assert.equal(await ownerCount(runtime.database.db, workspaceId), 1, `${name}: one owner is left`);
      }
    }
  });
});
