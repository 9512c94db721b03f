// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assertAccessible,
  collectConsoleErrors,
  launchBrowser,
  scrollsSideways,
} from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { startAppFixture } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';
/** 100 characters without a place to break: the longest name a rename allows. */
const LONG_NAME = `Acme${'W'.repeat(96)}`;

describe(`the Settings page in Chromium on ${testDialect}`, () => {
  it('renames the workspace to a 100-character name that wraps on a 390 px screen, on every page', async (t) => {
    const browser = await launchBrowser(t, { viewport: { width: 390, height: 844 } });
    const fixture = await startAppFixture(t, { listen: true });
    const base = fixture.baseUrl;
    const { workspaceId, invitationPath } = await fixture.provision({
      email: 'ada@example.com',
      name: 'Acme',
    });
    const page = await browser.newPage();
    const consoleErrors = collectConsoleErrors(page);
    await page.goto(`${base}${invitationPath}`);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await page.waitForURL(`${base}/w/${workspaceId}`);

    await page.getByRole('link', { name: 'Settings' }).click();
    await page.waitForURL(`${base}/w/${workspaceId}/settings`);
    await assertAccessible(page);
    await page.getByLabel('Workspace name').fill('');
    await page.getByRole('button', { name: 'Rename workspace' }).click();
    await page.locator('.error-summary').waitFor();
    await assertAccessible(page);

    await page.getByLabel('Workspace name').fill(LONG_NAME);
    await page.getByRole('button', { name: 'Rename workspace' }).click();
    await page.getByText('Workspace renamed.').waitFor();
    await assertAccessible(page);
    for (const path of ['/settings', '', '/members', '/controls', '/integrations', '/audit', '/billing']) {
      await page.goto(`${base}/w/${workspaceId}${path}`);
      assert.match((await page.locator('h1').textContent()) ?? '', new RegExp(LONG_NAME), path);
      assert.equal(await scrollsSideways(page), false, `${path || '/'} is wider than the screen`);
    }
    await page.goto(`${base}/workspaces`);
    assert.equal(await scrollsSideways(page), false, '/workspaces is wider than the screen');
    // The empty name's answer is a 400 on purpose; nothing else may complain.
    assert.deepEqual(
      consoleErrors.filter((message) => !/status of 400/.test(message)),
      [],
    );
  });
});
