// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertAccessible, launchBrowser } from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { startAppFixture } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';

describe(`the audit log page in Chromium on ${testDialect}`, () => {
  it('is accessible in Chromium, on a desktop and on a phone', async (t) => {
    const browser = await launchBrowser(t);
    const fixture = await startAppFixture(t, { listen: true });
    const { workspaceId, invitationPath } = await fixture.provision({
      email: 'ada@example.com',
      name: 'Acme',
    });
    const page = await browser.newPage();
    await page.goto(`${fixture.baseUrl}${invitationPath}`);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await page.waitForURL(/\/w\/ws_/);
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.waitForURL(`${fixture.baseUrl}/w/${workspaceId}/audit`);
    await assertAccessible(page);
    await page.getByLabel('Action').selectOption('account.signed_in');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/action=account\.signed_in/);
    assert.equal(await page.locator('tbody tr').count(), 1);
    await page.setViewportSize({ width: 390, height: 844 });
    await assertAccessible(page);
  });
});
