// db-scope: sqlite (on postgres: test/web/members.test.ts)

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { assertAccessible, collectConsoleErrors, launchBrowser } from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { startWebFixture } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';
const WORKSPACE_NAME = `Acme <img src=x onerror="alert('name')"><script>alert('script')</script>`;

/** Accepts confirmations (remove, revoke) and records any other dialog: a script that ran. */
function watchDialogs(page: Page): string[] {
  const alerts: string[] = [];
  page.on('dialog', (dialog) => {
    if (dialog.type() === 'confirm') return void dialog.accept();
    alerts.push(dialog.message());
    return void dialog.dismiss();
  });
  return alerts;
}

describe(`workspace members in Chromium on ${testDialect}`, () => {
  it('invites an admin by email, who accepts in another browser; the owner makes them a member, then removes them', async (t) => {
    const ownerBrowser = await launchBrowser(t);
    const inviteeBrowser = await launchBrowser(t);
    const fixture = await startWebFixture(t);
    const base = fixture.baseUrl;
    const { invitationUrl, workspaceId } = await fixture.buyWorkspace('owner@example.com');
    await fixture.runtime.database.db
      .updateTable('workspaces')
      .set({ name: WORKSPACE_NAME })
      .where('id', '=', workspaceId)
      .execute();

    const owner = await ownerBrowser.newPage();
    const ownerAlerts = watchDialogs(owner);
    const ownerErrors = collectConsoleErrors(owner);
    await owner.goto(invitationUrl);
    await owner.getByLabel('New password').fill(PASSWORD);
    await owner.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await owner.waitForURL(`${base}/w/${workspaceId}`);
    await owner.getByRole('link', { name: 'Members' }).click();
    await owner.waitForURL(`${base}/w/${workspaceId}/members`);
    assert.equal(await owner.locator('h1').innerText(), `${WORKSPACE_NAME}: Members`);
    await assertAccessible(owner);

    await owner.getByLabel('Email address').fill('ada@example.com');
    await owner.getByLabel('Role', { exact: true }).selectOption('admin');
    await owner.getByRole('button', { name: 'Send invitation' }).click();
    await owner.getByText('Invitation sent.').waitFor();
    const pending = owner.locator('tbody tr', { hasText: 'ada@example.com' });
    assert.match(await pending.innerText(), /admin/);
    assert.match(await pending.innerText(), /by owner@example\.com/);
    await assertAccessible(owner);

    const link = await fixture.latestInvitationUrl('ada@example.com');
    assert.ok(link.startsWith(`${base}/invitations/inv_`), 'the invitation arrived at the SMTP peer');
    const invitee = await inviteeBrowser.newPage();
    const inviteeAlerts = watchDialogs(invitee);
    await invitee.goto(link);
    assert.match(await invitee.locator('main').innerText(), /become the workspace's admin/);
    await invitee.getByLabel('New password').fill(PASSWORD);
    await invitee.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await invitee.waitForURL(`${base}/w/${workspaceId}`);
    await invitee
      .getByRole('navigation', { name: 'Workspace' })
      .getByRole('link', { name: 'Integrations' })
      .click();
    await invitee.waitForURL(`${base}/w/${workspaceId}/integrations`);
    assert.match(await invitee.locator('h1').innerText(), /: Integrations$/);

    await owner.goto(`${base}/w/${workspaceId}/members`);
    const row = owner.locator('tbody tr', { hasText: 'ada@example.com' });
    await row.getByLabel('Role of ada@example.com').selectOption('member');
    await row.getByRole('button', { name: /Change role/ }).click();
    await owner.getByText('Role changed.').waitFor();
    assert.match(await owner.locator('tbody tr', { hasText: 'ada@example.com' }).innerText(), /member/);

    const forbidden = await invitee.goto(`${base}/w/${workspaceId}/integrations`);
    assert.equal(forbidden?.status(), 403);
    await invitee.goto(`${base}/w/${workspaceId}/members`);
    assert.equal(
      await invitee.getByRole('button', { name: /Change role|Remove/ }).count(),
      0,
      'read-only for members',
    );
    await assertAccessible(invitee);

    await owner
      .locator('tbody tr', { hasText: 'ada@example.com' })
      .getByRole('button', { name: /Remove/ })
      .click();
    await owner.getByText('Member removed').waitFor();
    assert.equal(await owner.locator('tbody tr', { hasText: 'ada@example.com' }).count(), 0);
    await assertAccessible(owner);

    const gone = await invitee.goto(`${base}/w/${workspaceId}`);
    assert.equal(gone?.status(), 404);
    assert.equal((await invitee.goto(`${base}/w/${workspaceId}/members`))?.status(), 404);

    assert.deepEqual([...ownerAlerts, ...inviteeAlerts], [], 'no stored script ran');
    assert.equal(await owner.locator('img[src="x"]').count(), 0);
    assert.deepEqual(ownerErrors, [], 'no script errors or CSP violations');
  });
});
