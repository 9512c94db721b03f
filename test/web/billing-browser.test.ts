// db-scope: sqlite (on postgres: test/web/billing-page.test.ts)

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { getWorkspace } from '../../src/workspace/index.ts';
import { type BillingScene, billingScene, DECLINE_CARD, SUCCESS_CARD } from '../billing/helpers.ts';
import { assertAccessible, collectConsoleErrors, launchBrowser } from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';

/** The owner signs in in the browser and opens Billing of the workspace whose term ended (on Free). */
async function ownerOnBilling(
  t: TestContext,
): Promise<{ scene: BillingScene; page: Page; errors: string[] }> {
  const browser: BrowserContext = await launchBrowser(t);
  const scene = await billingScene(t, { termEnded: true });
  const base = scene.fixture.baseUrl;
  const page = await browser.newPage();
  const errors = collectConsoleErrors(page);
  await page.goto(`${base}/sign-in`);
  await page.getByLabel('Email').fill('owner@example.com');
  await page.getByLabel('Password').fill('correct horse battery staple');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL(/\/w/);
  await page.goto(`${base}/w/${scene.workspaceId}/billing`);
  await page.getByRole('heading', { name: /: Billing$/ }).waitFor();
  assert.match(await page.locator('dl.summary').innerText(), /Plan\s+Free/);
  await assertAccessible(page);
  return { scene, page, errors };
}

describe(`Billing in Chromium on ${testDialect}`, () => {
  it('a workspace on Free: the owner picks Pro annual, pays on the hosted page and is back on Pro for a year', async (t) => {
    const { scene, page, errors } = await ownerOnBilling(t);
    const { fixture, workspaceId } = scene;
    await page.getByRole('button', { name: 'Buy Pro, one year' }).click();
    await page.waitForURL(`${fixture.sandbox.url}/pay/**`);
    assert.match(await page.locator('body').innerText(), /\$3,099\.00/);
    await page.locator('input[name=card_number]').fill(SUCCESS_CARD);
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.waitForURL(`${fixture.baseUrl}/w/${workspaceId}/billing/return?checkout=*`);
    const expectedEnd = '2027-04-10T12:00:00.000Z';
    assert.match(
      await page.getByRole('status').innerText(),
      /^Paid: the workspace is on Pro until 10 Apr 2027, 12:00 UTC\.$/,
    );
    assert.equal(await page.getByRole('status').locator('time').getAttribute('datetime'), expectedEnd);
    await assertAccessible(page);

    await page.getByRole('link', { name: 'Back to Billing' }).click();
    const summary = await page.locator('dl.summary').innerText();
    assert.match(summary, /Plan\s+Pro/);
    assert.match(summary, /10 Apr 2026, 12:00 UTC to 10 Apr 2027, 12:00 UTC/);
    assert.match(
      await page.locator('table', { hasText: 'Payment reference' }).innerText(),
      /App\s+Pro, one year\s+\$3,099\.00\s+pi_/,
    );
    await assertAccessible(page);
    const workspace = await getWorkspace(fixture.runtime.database.db, workspaceId);
    assert.equal(workspace?.plan, 'pro');
    assert.equal(workspace?.currentTerm?.endsAt.toISOString(), expectedEnd);
    assert.deepEqual(errors, []);
  });

  it('a declined card leaves the workspace on Free', async (t) => {
    const { scene, page, errors } = await ownerOnBilling(t);
    const { fixture, workspaceId } = scene;
    await page.getByRole('button', { name: 'Buy Pro, one year' }).click();
    await page.waitForURL(`${fixture.sandbox.url}/pay/**`);
    await page.locator('input[name=card_number]').fill(DECLINE_CARD);
    await page.getByRole('button', { name: 'Pay' }).click();
    assert.match(await page.locator('[role=alert]').innerText(), /Your card was declined\./);
    await page.getByRole('link', { name: 'Cancel and return' }).click();
    await page.waitForURL(`${fixture.baseUrl}/w/${workspaceId}/billing`);
    assert.match(await page.locator('dl.summary').innerText(), /Plan\s+Free/);
    await fixture.sandbox.events.flush();
    assert.equal((await getWorkspace(fixture.runtime.database.db, workspaceId))?.plan, 'free');
    assert.deepEqual(errors, []);
  });
});
