// db-scope: sqlite

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { extractText, getDocumentProxy } from 'unpdf';
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

describe(`the Statement of Applicability page in Chromium on ${testDialect}`, () => {
  it('approves version 1, shows "changed since version 1" with the differences after a control changes, and downloads', async (t) => {
    const browser = await launchBrowser(t);
    const fixture = await startAppFixture(t, { listen: true });
    const base = fixture.baseUrl;
    const { workspaceId, invitationPath } = await fixture.provision({
      email: 'ada@example.com',
      name: 'Acme Ltd',
    });
    await upsertPerson(
      { db: fixture.runtime.database.db, clock: fixture.runtime.clock },
      workspaceId,
      { email: 'grace@example.com', name: 'Grace Hopper' },
      OPERATOR_SOURCE,
    );
    const workspace = `${base}/w/${workspaceId}`;

    const page = await browser.newPage();
    const consoleErrors = collectConsoleErrors(page);
    await page.goto(`${base}${invitationPath}`);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await page.waitForURL(workspace);

    await page.goto(`${workspace}/controls/A.7.1`);
    await page.getByLabel('Status', { exact: true }).selectOption('not_applicable');
    await page.getByLabel('Justification of applicability').fill('No offices: all staff work remotely.');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(/notice=/);

    await page
      .getByRole('navigation', { name: 'Workspace' })
      .getByRole('link', { name: 'Statement of Applicability' })
      .click();
    await page.waitForURL(`${workspace}/soa`);
    assert.equal(await page.locator('table.soa-table tbody tr').count(), 93);
    const excluded = page.locator('table.soa-table tbody tr', {
      hasText: 'A.7.1 Physical security perimeters',
    });
    assert.match(await excluded.innerText(), /No\s+No offices: all staff work remotely\.\s+Not applicable/);
    await assertAccessible(page);
    assert.equal(await scrollsSideways(page), false, 'no sideways scrolling');

    await page.getByRole('button', { name: 'Approve as version 1' }).click();
    await page
      .getByText('Approved: the Statement of Applicability is kept as this version for good.')
      .waitFor();
    assert.match(
      await page.locator('#state-title + p').innerText(),
      /Version 1, approved .* by ada@example\.com/,
    );
    const versions = page.locator('section', { has: page.locator('#versions-title') });
    assert.match(await versions.innerText(), /1\s+.*ada@example\.com\s+[0-9a-f]{64}/);

    const download = page.waitForEvent('download');
    await versions.getByRole('link', { name: 'PDF of version 1' }).click();
    const pdfPath = await (await download).path();
    const { text } = await extractText(await getDocumentProxy(new Uint8Array(readFileSync(pdfPath))), {
      mergePages: true,
    });
    assert.match(text, /Statement of Applicability[\s\S]*Acme Ltd[\s\S]*Version\s+1[\s\S]*ada@example\.com/);

    await page.goto(`${workspace}/controls/A.8.24`);
    await page.getByLabel('Status', { exact: true }).selectOption('implemented');
    await page.getByLabel('Owner', { exact: true }).selectOption({ label: 'Grace Hopper' });
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(/notice=/);
    await page.goto(`${workspace}/soa`);
    await page.getByText('Changed since version 1', { exact: true }).first().waitFor();
    const changes = page.locator('section', { has: page.locator('#changes-title') });
    assert.equal(await changes.getByRole('heading').innerText(), 'Changed since version 1');
    const rows = await changes.locator('tbody tr').allInnerTexts();
    assert.deepEqual(
      rows.map((row) => row.replace(/\s+/g, ' ').trim()),
      [
        'A.8.24 Use of cryptography Implementation status Not started Implemented',
        'A.8.24 Use of cryptography Owner — Grace Hopper',
      ],
    );
    assert.equal(await page.getByRole('button', { name: 'Approve as version 2' }).count(), 1);
    await assertAccessible(page);
    if (SHOTS_DIR) await page.screenshot({ path: path.join(SHOTS_DIR, 'soa.png'), fullPage: false });

    await page.setViewportSize({ width: 375, height: 800 });
    await page.reload();
    assert.equal(await scrollsSideways(page), false, 'no sideways scrolling on a phone');
    assert.deepEqual(consoleErrors, []);
  });
});
