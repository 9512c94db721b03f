// db-scope: sqlite (on postgres: test/web/glance.test.ts)

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { assertAccessible, collectConsoleErrors, launchBrowser } from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { signedInOwner } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';

async function checkPage(page: Page, url: string, heading: RegExp): Promise<void> {
  await page.goto(url);
  assert.match(await page.locator('h1').innerText(), heading);
  await assertAccessible(page);
}

describe(`the overview and the controls list in Chromium on ${testDialect}`, () => {
  it('has no serious accessibility violation at desktop and phone width, and changes a status on the phone', async (t) => {
    const desktop = await launchBrowser(t);
    // axe runs as a script of the page, so both browsers keep JavaScript on; the forms need none.
    const phone = await launchBrowser(t, { viewport: { width: 375, height: 740 } });
    const owner = await signedInOwner(t, { listen: true });
    const all = (await owner.api('GET', '/controls?limit=200')).body.data as { id: string }[];
    await owner.api('PATCH', `/controls/${all[0]?.id}`, { status: 'implemented' });
    await owner.api('POST', '/risks', { title: 'Leavers keep access', likelihood: 4, impact: 5 });
    await owner.api('POST', '/tasks', { title: 'Write the access policy', control_id: all[14]?.id });
    await owner.api('POST', '/evidence', { title: 'Restore test', url: 'https://wiki.example.com/restore' });
    await owner.api('POST', '/people', { email: 'ada@example.com', name: 'Ada Lovelace' });
    const base = owner.fixture.baseUrl;
    for (const context of [desktop, phone]) {
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      const errors = collectConsoleErrors(page);
      await page.goto(`${base}/sign-in`);
      await page.getByLabel('Email address').fill('owner@example.com');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(/\/w(orkspaces|\/)/);
      await checkPage(page, `${base}${owner.page}`, /Workspace for owner@example\.com/);
      await checkPage(page, `${base}${owner.page}/controls`, /Controls$/);
      assert.deepEqual(errors, []);
    }
    const page = await phone.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${base}${owner.page}/controls?theme=people`);
    const row = page.locator('tr', { hasText: 'Screening' });
    await row.getByLabel(/Status of/).selectOption('implemented');
    await row.getByLabel(/Owner of/).selectOption({ label: 'Ada Lovelace' });
    await row.getByRole('button', { name: /Save/ }).click();
    await page.getByText('Control updated.').waitFor();
    assert.match(page.url(), /theme=people/);
    await assertAccessible(page);
    const screening = (await owner.api('GET', '/controls?q=Screening')).body.data[0];
    assert.equal(screening.status, 'implemented');
  });
});
