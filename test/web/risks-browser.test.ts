// db-scope: sqlite

import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { upsertPerson } from '../../src/compliance/index.ts';
import {
  assertAccessible,
  collectConsoleErrors,
  launchBrowser,
  scrollsSideways,
} from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { startAppFixture } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';
/** Where to save a screenshot of each page, when set (to look at them). */
const SHOTS_DIR = process.env.SHOTS_DIR;

describe(`the Risks and Vendors pages in Chromium on ${testDialect}`, () => {
  it('creates a treated risk and a vendor, follows the risk map, deletes after confirming; accessible and no wider than a phone', async (t) => {
    const browser = await launchBrowser(t);
    const fixture = await startAppFixture(t, { listen: true });
    const base = fixture.baseUrl;
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    const deps = { db: fixture.runtime.database.db, clock: fixture.runtime.clock };
    await upsertPerson(
      deps,
      workspaceId,
      { email: 'grace@example.com', name: 'Grace Hopper' },
      OPERATOR_SOURCE,
    );
    const workspace = `${base}/w/${workspaceId}`;

    const page = await browser.newPage();
    const consoleErrors = collectConsoleErrors(page);
    const confirmations: string[] = [];
    page.on('dialog', (dialog) => {
      confirmations.push(dialog.message());
      return void dialog.accept();
    });
    await page.goto(`${base}${invitationPath}`);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await page.waitForURL(workspace);

    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Risks' }).click();
    await page.waitForURL(`${workspace}/risks`);
    await page.getByRole('link', { name: 'New risk' }).click();
    await page.getByLabel('Title').fill('Laptop theft exposes customer data');
    await page.getByLabel('Description').fill('Unencrypted disks on staff laptops.');
    await page.getByLabel('Owner').selectOption({ label: 'Grace Hopper' });
    const before = page.getByRole('group', { name: 'Rating before treatment' });
    await before.getByLabel('Likelihood').selectOption('4');
    await before.getByLabel('Impact').selectOption('5');
    await page.getByLabel('Treatment', { exact: true }).selectOption('mitigate');
    await page.getByLabel('Treatment plan').fill('Full-disk encryption through device management.');
    await page.getByLabel('Treatment due').fill('2026-12-31');
    const after = page.getByRole('group', { name: 'Rating after treatment' });
    await after.getByLabel('Likelihood').selectOption('1');
    await after.getByLabel('Impact').selectOption('5');
    await page.locator('summary', { hasText: 'Technological' }).click();
    await page.getByLabel('A.8.24 Use of cryptography').check();
    await assertAccessible(page);
    await page.getByRole('button', { name: 'Create risk' }).click();
    await page.getByText('Risk created.').waitFor();
    const riskUrl = page.url().split('?')[0] ?? '';
    const summary = await page.locator('dl.summary').innerText();
    assert.match(summary, /20 Critical/);
    assert.match(summary, /5 Medium \(likelihood 1 × impact 5\)/);
    assert.match(summary, /A\.8\.24 Use of cryptography/);
    assert.match(summary, /Grace Hopper/);
    assert.match(await page.locator('.history').innerText(), /Risk created by ada@example\.com/);

    await page.goto(`${workspace}/risks`);
    await page.locator('td[data-likelihood="4"][data-impact="5"] a').click();
    await page.waitForURL(`${workspace}/risks?status=open&likelihood=4&impact=5`);
    assert.equal(await page.getByRole('link', { name: 'Laptop theft exposes customer data' }).count(), 1);

    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Vendors' }).click();
    await page.getByRole('link', { name: 'New vendor' }).click();
    await page.getByLabel('Name').fill('Example Cloud Hosting');
    await page.getByLabel('Website').fill('cloud.example.com');
    await page.getByRole('button', { name: 'Create vendor' }).click();
    await page.locator('.error-summary').waitFor();
    await assertAccessible(page);
    await page.getByLabel('Website').fill('https://cloud.example.com');
    await page.getByLabel('Risk level').selectOption('high');
    await page.getByLabel('Owner').selectOption({ label: 'Grace Hopper' });
    await page.getByLabel('Next review').fill('2020-01-31');
    await page.getByRole('button', { name: 'Create vendor' }).click();
    await page.getByText('Vendor created.').waitFor();
    const vendorUrl = page.url().split('?')[0] ?? '';
    assert.match(await page.locator('dl.summary').innerText(), /Review overdue/);

    const pages = {
      risks: `${workspace}/risks`,
      'risk-new': `${workspace}/risks/new`,
      risk: riskUrl,
      vendors: `${workspace}/vendors`,
      'vendor-new': `${workspace}/vendors/new`,
      vendor: vendorUrl,
      overview: workspace,
    };
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      for (const [name, url] of Object.entries(pages)) {
        await page.goto(url);
        await assertAccessible(page);
        assert.equal(await scrollsSideways(page), false, `${name} is wider than ${width} px`);
        if (SHOTS_DIR) {
          const suffix = width === 1280 ? '' : `-${width}`;
          await page.screenshot({ path: path.join(SHOTS_DIR, `${name}${suffix}.png`), fullPage: true });
        }
      }
    }

    await page.goto(riskUrl);
    await page.getByRole('button', { name: 'Delete risk' }).click();
    await page.getByText('Risk deleted.').waitFor();
    await page.goto(vendorUrl);
    await page.getByRole('button', { name: 'Delete vendor' }).click();
    await page.getByText('Vendor deleted.').waitFor();
    assert.deepEqual(confirmations, [
      'Delete the risk “Laptop theft exposes customer data”? This cannot be undone.',
      'Delete the vendor “Example Cloud Hosting”? This cannot be undone.',
    ]);
    // The refused website is a 400 on purpose; nothing else may complain.
    assert.deepEqual(
      consoleErrors.filter((message) => !/status of 400/.test(message)),
      [],
    );
  });
});
