// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testDialect } from '../helpers/database.ts';
import { acceptAsNewAccount, startAppFixture } from '../helpers/web.ts';

/** The hidden form id of the form posting to `action` on the page. */
function formIdOf(html: string, action: string): string {
  const form = new RegExp(`<form method="post" action="${action}"[\\s\\S]*?</form>`).exec(html)?.[0] ?? '';
  const id = /name="form_id" value="([^"]+)"/.exec(form)?.[1];
  assert.ok(id, `the form to ${action} carries a form id`);
  return id;
}

describe(`forms that create something shown once, sent twice, on ${testDialect}`, () => {
  it('make one API key and one webhook subscription when the answer page is reloaded (the form sent again)', async (t) => {
    const fixture = await startAppFixture(t, { env: { WEBHOOK_ALLOW_LOOPBACK: 'true' } });
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'owner@example.com' });
    const client = await acceptAsNewAccount(fixture.runtime.app, invitationPath);
    const db = fixture.runtime.database.db;

    const keysAction = `/w/${workspaceId}/integrations/keys`;
    const keysPage = await client.get(`/w/${workspaceId}/integrations`);
    const keyForm = {
      name: 'Compliance agent',
      expires_in: 'never',
      form_id: formIdOf(keysPage.body, keysAction),
    };
    const created = await client.post(keysAction, keyForm);
    assert.equal(created.status, 201);
    assert.match(created.body, /svc_(live|test)_/);
    const again = await client.post(keysAction, keyForm);
    assert.equal(again.status, 409);
    assert.match(again.body, /This form was sent already, and the key it created is in the list/);
    assert.match(created.body, /id="new-key-value"/);
    assert.doesNotMatch(again.body, /id="new-key-value"/);
    const keys = await db
      .selectFrom('api_keys')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .execute();
    assert.equal(keys.length, 1);

    const hooksAction = `/w/${workspaceId}/integrations/webhooks`;
    const hooksPage = await client.get(hooksAction);
    const hookForm = {
      url: 'http://127.0.0.1:9/hooks',
      event_types: ['task.created'],
      form_id: formIdOf(hooksPage.body, hooksAction),
    };
    assert.equal((await client.post(hooksAction, hookForm)).status, 201);
    const hookAgain = await client.post(hooksAction, hookForm);
    assert.equal(hookAgain.status, 409);
    assert.match(
      hookAgain.body,
      /This form was sent already, and the subscription it created is in the list/,
    );
    const hooks = await db
      .selectFrom('webhook_subscriptions')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .execute();
    assert.equal(hooks.length, 1);

    // A fresh page is a fresh form: it creates another.
    const next = await client.get(`/w/${workspaceId}/integrations`);
    assert.equal(
      (await client.post(keysAction, { ...keyForm, form_id: formIdOf(next.body, keysAction) })).status,
      201,
    );
  });

  it('lets a refused form be corrected and sent again with the same form id', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'owner@example.com' });
    const client = await acceptAsNewAccount(fixture.runtime.app, invitationPath);
    const action = `/w/${workspaceId}/integrations/keys`;
    const formId = formIdOf((await client.get(`/w/${workspaceId}/integrations`)).body, action);
    assert.equal((await client.post(action, { name: '', expires_in: 'never', form_id: formId })).status, 400);
    assert.equal(
      (await client.post(action, { name: 'Named now', expires_in: 'never', form_id: formId })).status,
      201,
    );
  });

  it('rotate a webhook secret once and invite once when the form is sent again, or twice at once', async (t) => {
    const fixture = await startAppFixture(t, { env: { WEBHOOK_ALLOW_LOOPBACK: 'true' } });
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'owner@example.com' });
    const client = await acceptAsNewAccount(fixture.runtime.app, invitationPath);
    const db = fixture.runtime.database.db;

    const hooksAction = `/w/${workspaceId}/integrations/webhooks`;
    const hooksPage = await client.get(hooksAction);
    await client.post(hooksAction, {
      url: 'http://127.0.0.1:9/hooks',
      event_types: ['task.created'],
      form_id: formIdOf(hooksPage.body, hooksAction),
    });
    const hook = await db
      .selectFrom('webhook_subscriptions')
      .select(['id', 'secret'])
      .executeTakeFirstOrThrow();
    const rotateAction = `${hooksAction}/${hook.id}/rotate-secret`;
    const detail = await client.get(`${hooksAction}/${hook.id}`);
    const rotateForm = { grace: '24h', form_id: formIdOf(detail.body, rotateAction) };
    const rotated = await client.post(rotateAction, rotateForm);
    assert.equal(rotated.status, 200, rotated.body);
    const again = await client.post(rotateAction, rotateForm);
    assert.equal(again.status, 409);
    assert.match(again.body, /the secret was rotated once/);
    const stored = await db
      .selectFrom('webhook_subscriptions')
      .select('previous_secret')
      .where('id', '=', hook.id)
      .executeTakeFirstOrThrow();
    assert.equal(stored.previous_secret, hook.secret, 'the first secret keeps its grace: one rotation');

    const membersAction = `/w/${workspaceId}/members/invitations`;
    const membersPage = await client.get(`/w/${workspaceId}/members`);
    const inviteForm = {
      email: 'ada@example.com',
      role: 'member',
      form_id: formIdOf(membersPage.body, membersAction),
    };
    const [first, second] = await Promise.all([
      client.post(membersAction, inviteForm),
      client.post(membersAction, inviteForm),
    ]);
    for (const answer of [first, second]) {
      assert.match(answer.location ?? '', new RegExp(`^/w/${workspaceId}/members`));
    }
    const invitationsTo = async (email: string) =>
      (await db.selectFrom('workspace_invitations').select('id').where('email', '=', email).execute()).length;
    assert.equal(
      await invitationsTo('ada@example.com'),
      1,
      'one invitation, one email, one of the three an hour used',
    );

    // Back to the page from before (its form id), another address typed: another invitation.
    const other = await client.post(membersAction, { ...inviteForm, email: 'grace@example.com' });
    assert.equal(other.location, `/w/${workspaceId}/members?notice=invited`);
    assert.equal(await invitationsTo('grace@example.com'), 1);
  });
});
