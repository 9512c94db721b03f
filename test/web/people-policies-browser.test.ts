// db-scope: sqlite (on postgres: test/web/people.test.ts, test/web/policies.test.ts)

import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import {
  assertAccessible,
  collectConsoleErrors,
  launchBrowser,
  scrollsSideways,
} from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { startAppFixture } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';
const SHOTS = process.env.SHOTS_DIR;

/** Each page passes axe and fits 390 px without sideways scrolling; with SHOTS_DIR, a screenshot too. */
async function checkPage(page: Page, name: string): Promise<void> {
  await page.setViewportSize({ width: 1280, height: 900 });
  await assertAccessible(page);
  if (SHOTS) {
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 390, height: 844 });
  assert.equal(await scrollsSideways(page), false, `${name} scrolls sideways at 390 px`);
  await assertAccessible(page);
  if (SHOTS) await page.screenshot({ path: path.join(SHOTS, `${name}-390.png`), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
}

describe(`People and Policies in Chromium on ${testDialect}`, () => {
  it('imports people from a file, marks one as left, writes, approves and acknowledges a policy', async (t) => {
    const browser = await launchBrowser(t);
    const fixture = await startAppFixture(t, { listen: true });
    const base = fixture.baseUrl;
    const { workspaceId, invitationPath } = await fixture.provision({
      email: 'ada@example.com',
      name: 'Acme Ltd',
    });
    const page = await browser.newPage();
    const consoleErrors = collectConsoleErrors(page);
    await page.goto(`${base}${invitationPath}`);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await page.waitForURL(`${base}/w/${workspaceId}`);

    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'People' }).click();
    await page.waitForURL(`${base}/w/${workspaceId}/people`);
    await page.getByRole('link', { name: 'Import a CSV file' }).click();
    await checkPage(page, 'people-import');
    const file = path.join(tmpdir(), `people-${process.pid}.csv`);
    t.after(() => rmSync(file, { force: true }));
    writeFileSync(
      file,
      [
        'email,name,title,department,employment_status',
        'grace.hopper@navy.example.com,Grace Hopper,Rear Admiral (Computer Sciences),Engineering,current',
        'alan@example.com,Alan Turing,Cryptanalyst,Research,contractor',
        'margaret@example.com,Margaret Hamilton,Director of Software Engineering,Engineering,future',
        'not-an-address,Nobody,,,current',
        '',
      ].join('\n'),
    );
    await page.getByLabel('CSV file').setInputFiles(file);
    await page.getByRole('button', { name: 'Preview the import' }).click();
    await page.getByRole('heading', { name: 'Check the import' }).waitFor();
    assert.match(await page.locator('main').innerText(), /To add \(3\)[\s\S]*Refused \(1\)/);
    await checkPage(page, 'people-import-preview');
    await page.getByRole('button', { name: 'Apply the import' }).click();
    await page.getByText('Import applied: 3 added, 0 changed, 0 already up to date, 1 refused.').waitFor();
    await checkPage(page, 'people-import-done');

    await page.getByRole('link', { name: 'Open the directory' }).click();
    await checkPage(page, 'people');
    await page.getByLabel('Employment status').selectOption('contractor');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/employment_status=contractor/);
    assert.deepEqual(await page.locator('tbody th').allInnerTexts(), ['Alan Turing']);
    await page.getByRole('link', { name: 'Alan Turing' }).click();
    await page.getByLabel('Left on').fill('2026-02-28');
    await page.getByRole('button', { name: 'Mark as left' }).click();
    await page.getByText('Marked as left.').waitFor();
    assert.match(await page.locator('.summary').innerText(), /Left on\s+2026-02-28/);
    await checkPage(page, 'person');
    await page.goto(`${base}/w/${workspaceId}/people/new`);
    await checkPage(page, 'person-new');

    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Policies' }).click();
    await page.getByRole('link', { name: 'New policy' }).click();
    await checkPage(page, 'policy-new');
    await page.getByLabel('Key').fill('access-control');
    await page.getByLabel('Title').fill('Access Control Policy');
    await page.getByLabel('Summary').fill('How access to systems and data is granted, reviewed and removed.');
    await page
      .getByLabel('Text')
      .fill(
        '# Purpose\n\nAccess is granted on **least privilege** and reviewed every quarter.\n\n' +
          '## Rules\n\n1. Every account belongs to one person.\n2. Access ends on the day someone leaves.\n' +
          '   - Their manager files the request\n\nSee [the access standard](https://example.com/standards/access-control-and-identity-management-v2).\n\n' +
          '`sudo` is granted per host.\n\n<img src=x onerror="alert(1)">',
      );
    await page.getByRole('button', { name: 'Create policy' }).click();
    await page.getByText('Policy created.').waitFor();
    await page.getByRole('button', { name: 'Approve this draft as version 1' }).click();
    await page.getByText('Draft approved').waitFor();
    await page.getByRole('button', { name: 'I have read and acknowledge version 1' }).click();
    await page.getByText('You acknowledged version 1 on').waitFor();
    assert.equal(await page.locator('.policy-body img').count(), 0, 'no HTML from the text');
    assert.equal(await page.locator('.policy-body a[href^="https://example.com/"]').count(), 1);
    await page.getByLabel('Text').fill('# Purpose\n\nAccess is granted on *need to know*.');
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByRole('heading', { name: 'Preview of your changes (not saved)' }).waitFor();
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByRole('heading', { name: 'Draft of version 2' }).waitFor();
    await checkPage(page, 'policy');
    await page.getByRole('link', { name: 'Version 1' }).click();
    await page.getByRole('heading', { name: 'Access Control Policy, version 1' }).waitFor();
    await checkPage(page, 'policy-version');
    await page.goto(`${base}/w/${workspaceId}/policies`);
    await checkPage(page, 'policies');

    assert.deepEqual(consoleErrors, [], 'no script errors or CSP violations');
  });
});
