// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertAccessible, collectConsoleErrors, launchBrowser } from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { startWebFixture } from '../helpers/web.ts';

describe(`the app in Chromium on ${testDialect}`, () => {
  it('takes an agent-bought workspace from the emailed invitation to a working, then revoked, API key', async (t) => {
    const browser = await launchBrowser(t);
    const fixture = await startWebFixture(t);
    const { invitationUrl, workspaceId } = await fixture.buyWorkspace('ada@example.com', 'svc-pro-annual');
    assert.ok(invitationUrl.startsWith(`${fixture.baseUrl}/invitations/inv_`));

    const page = await browser.newPage();
    const consoleErrors = collectConsoleErrors(page);

    await page.goto(invitationUrl);
    const summary = page.locator('dl.summary');
    await assertAccessible(page);
    assert.match(await summary.innerText(), /ada's workspace|Workspace for ada@example\.com/);
    assert.match(await summary.innerText(), /Pro/);
    assert.match(await summary.innerText(), /Prepaid until 1 Mar 2027/);
    assert.match(await summary.innerText(), /ada@example\.com/);

    await page.getByLabel('New password').fill('correct horse battery staple');
    await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await page.waitForURL(`${fixture.baseUrl}/w/${workspaceId}`);
    assert.match(await page.locator('h1').innerText(), /workspace/i);
    assert.match(await page.locator('header').innerText(), /Signed in as ada@example\.com/);
    await assertAccessible(page);

    await page.getByRole('link', { name: 'Integrations' }).first().click();
    await page.waitForURL(`${fixture.baseUrl}/w/${workspaceId}/integrations`);
    await assertAccessible(page);
    await page.getByLabel('Name').fill('Compliance agent');
    await page.getByLabel('Expires').selectOption('90');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.locator('#new-key-value');
    const key = (await shown.innerText()).trim();
    assert.match(key, /^svc_live_[0-9A-Za-z]{36}$/);
    assert.equal(await page.getByRole('button', { name: 'Copy key' }).isVisible(), true);
    await assertAccessible(page);

    const me = await fetch(`${fixture.baseUrl}/api/v1/me`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(me.status, 200);
    const body = (await me.json()) as { organization: { id: string }; api_key: { name: string } };
    assert.equal(body.organization.id, workspaceId);
    assert.equal(body.api_key.name, 'Compliance agent');

    await page.goto(`${fixture.baseUrl}/w/${workspaceId}/integrations`);
    assert.equal(await page.locator('#new-key-value').count(), 0, 'the key is shown once');
    const row = page.locator('tbody tr', { hasText: 'Compliance agent' });
    assert.match(await row.innerText(), new RegExp(`${key.slice(0, 13)}…${key.slice(-4)}`));
    assert.match(await row.innerText(), /by ada@example\.com/);
    page.once('dialog', (dialog) => void dialog.accept());
    await row.getByRole('button', { name: /Revoke/ }).click();
    await page.waitForURL(`${fixture.baseUrl}/w/${workspaceId}/integrations`);
    assert.match(await page.locator('tbody tr', { hasText: 'Compliance agent' }).innerText(), /Revoked/);

    const revoked = await fetch(`${fixture.baseUrl}/api/v1/me`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(revoked.status, 401);
    assert.equal(((await revoked.json()) as { code: string }).code, 'api_key_revoked');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${fixture.baseUrl}/`);
    await page.goto(`${fixture.baseUrl}/w/${workspaceId}`);
    assert.ok(page.url().startsWith(`${fixture.baseUrl}/sign-in?next=`));
    await page.getByLabel('Email address').fill('ada@example.com');
    await page.getByLabel('Password').fill('correct horse battery staple');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${fixture.baseUrl}/w/${workspaceId}`);

    assert.deepEqual(consoleErrors, [], 'no script errors or CSP violations');
  });
});
