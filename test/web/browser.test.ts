// db-scope: sqlite (on postgres: test/web/pages.test.ts, test/web/security.test.ts, test/web/invitations.test.ts)

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { DAY_MS } from '../../src/shared/clock.ts';
import { assertAccessible, collectConsoleErrors, launchBrowser } from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { startAppFixture } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';

async function acceptInBrowser(page: Page, invitationUrl: string): Promise<void> {
  await page.goto(invitationUrl);
  await page.getByLabel('New password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
  await page.waitForURL(/\/w\/ws_/);
}

describe(`the app's pages in Chromium on ${testDialect}`, () => {
  for (const viewport of [
    { name: 'desktop', width: 1280, height: 900 },
    { name: 'phone', width: 390, height: 844 },
  ]) {
    it(`has no serious or critical accessibility violation on any page (${viewport.name})`, async (t) => {
      const browser = await launchBrowser(t, { viewport });
      const fixture = await startAppFixture(t, { listen: true });
      const base = fixture.baseUrl;
      const page = await browser.newPage();
      const consoleErrors = collectConsoleErrors(page);
      const visit = async (url: string) => {
        await page.goto(url);
        await assertAccessible(page);
      };

      for (const path of ['/', '/legal/terms', '/legal/privacy', '/sign-in', '/no-such-page'])
        await visit(`${base}${path}`);
      await page.getByRole('link', { name: 'Sign in' }).first().click();
      await page.getByLabel('Email address').fill('nobody@example.com');
      await page.getByLabel('Password').fill('wrong');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('.error-summary').waitFor();
      await assertAccessible(page);

      const first = await fixture.provision({ email: 'ada@example.com', name: 'Acme Ltd' });
      await visit(`${base}${first.invitationPath}`);
      await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
      await page.locator('.error-summary').waitFor();
      await assertAccessible(page);
      await page.getByLabel('New password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
      await page.waitForURL(`${base}/w/${first.workspaceId}`);
      await assertAccessible(page);
      await visit(`${base}/workspaces`);
      await visit(`${base}/w/${first.workspaceId}/members`);
      await visit(`${base}/w/${first.workspaceId}/integrations`);
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.locator('.error-summary').waitFor();
      await assertAccessible(page);
      await page.getByLabel('Name').fill('Agent');
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.locator('#new-key-value').waitFor();
      await assertAccessible(page);

      const second = await fixture.provision({ email: 'ada@example.com', name: 'Second Ltd' });
      await visit(`${base}${second.invitationPath}`);
      const other = await fixture.provision({ email: 'bob@example.com', name: 'Bob Ltd' });
      await visit(`${base}${other.invitationPath}`);
      await page.getByRole('button', { name: 'Sign out and continue' }).click();
      await page.waitForURL(`${base}${other.invitationPath}`);
      await assertAccessible(page);

      fixture.runtime.clock.advance(8 * DAY_MS);
      await visit(`${base}${other.invitationPath}`);
      await page.getByRole('button', { name: /Send a fresh invitation/ }).click();
      await page.getByRole('heading', { name: 'A fresh invitation is on its way' }).waitFor();
      await assertAccessible(page);
      await visit(`${base}${other.invitationPath}`);

      assert.deepEqual(
        consoleErrors.filter((error) => !/status of 40[0-9]/.test(error)),
        [],
      );
    });
  }

  it('refuses a form another site submits into the app, even with the session cookie', async (t) => {
    const browser = await launchBrowser(t);
    const fixture = await startAppFixture(t, { listen: true });
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    const target = `${fixture.baseUrl}/w/${workspaceId}/integrations/keys`;
    // Another port of 127.0.0.1 is another origin but the same site, so SameSite=Lax still sends
    // the cookie: the Origin check and the token have to stop it.
    const attacker = createServer((_request, response) => {
      response.setHeader('content-type', 'text/html');
      response.end(`<!doctype html><title>prize</title>
<form method="post" action="${target}"><input name="name" value="planted"><input name="_csrf" value="guess"></form>
<script>document.forms[0].submit()</script>`);
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => attacker.close(() => resolve())));

    const page = await browser.newPage();
    await acceptInBrowser(page, `${fixture.baseUrl}${invitationPath}`);
    await page.goto(`http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`);
    await page.waitForURL(target);
    assert.match(await page.locator('h1').innerText(), /This form could not be accepted/);
    const keys = await fixture.runtime.database.db.selectFrom('api_keys').select('id').execute();
    assert.deepEqual(keys, []);
  });

  it('shows script stored in names as text without running it', async (t) => {
    const browser = await launchBrowser(t);
    const fixture = await startAppFixture(t, { listen: true });
    const name = `Acme <img src=x onerror="alert('name')"><script>alert('script')</script>`;
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'ada@example.com', name });
    const page = await browser.newPage();
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await acceptInBrowser(page, `${fixture.baseUrl}${invitationPath}`);
    assert.equal(await page.locator('h1').innerText(), name);
    await page.goto(`${fixture.baseUrl}/w/${workspaceId}/integrations`);
    await page.getByLabel('Name').fill(`<script>alert('key')</script>`);
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#new-key-value').waitFor();
    assert.match(await page.locator('tbody').innerText(), /<script>alert\('key'\)<\/script>/);
    await page.goto(`${fixture.baseUrl}/workspaces`);
    assert.deepEqual(dialogs, []);
    assert.equal(await page.locator('img[src="x"]').count(), 0);
  });

  it('works without JavaScript: accept, create a key and see it, revoke it', async (t) => {
    const browser = await launchBrowser(t, { javaScriptEnabled: false });
    const fixture = await startAppFixture(t, { listen: true });
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    const page = await browser.newPage();
    await acceptInBrowser(page, `${fixture.baseUrl}${invitationPath}`);
    await page.goto(`${fixture.baseUrl}/w/${workspaceId}/integrations`);
    await page.getByLabel('Name').fill('No script');
    await page.getByRole('button', { name: 'Create key' }).click();
    assert.match(await page.locator('#new-key-value').innerText(), /^svc_live_/);
    assert.equal(
      await page.getByRole('button', { name: 'Copy key' }).isVisible(),
      false,
      'no dead copy button',
    );
    await page.getByRole('button', { name: /Revoke/ }).click();
    await page.waitForURL(`${fixture.baseUrl}/w/${workspaceId}/integrations`);
    assert.match(await page.locator('tbody').innerText(), /Revoked/);
  });
});
