// db-scope: sqlite (on postgres: test/web/evidence.test.ts, test/web/control-page.test.ts)

import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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
const PDF = '%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n';

describe(`the Evidence and control pages in Chromium on ${testDialect}`, () => {
  it('uploads two files with progress, links them to a control, justifies an exclusion; accessible and no wider than a phone', async (t) => {
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
    const files = await mkdtemp(path.join(tmpdir(), 'evidence-'));
    const review = path.join(files, 'access-review.pdf');
    const notes = path.join(files, 'restore-test.md');
    await writeFile(review, PDF);
    await writeFile(notes, '# Restore test\n\nRestored the database in 12 minutes.\n');

    const page = await browser.newPage();
    const consoleErrors = collectConsoleErrors(page);
    await page.goto(`${base}${invitationPath}`);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await page.waitForURL(workspace);

    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Evidence' }).click();
    await page.waitForURL(`${workspace}/evidence`);
    await page.getByRole('link', { name: 'Add evidence' }).click();
    await page.getByLabel('Files', { exact: true }).setInputFiles([review, notes]);
    const uploadForm = page.locator('form[data-upload-progress]');
    await uploadForm.locator('summary', { hasText: 'Organizational' }).click();
    await uploadForm.getByLabel('A.5.15 Access control').check();
    await assertAccessible(page);
    await page.getByRole('button', { name: 'Upload files' }).click();
    await page.waitForURL(`${workspace}/evidence?notice=uploaded`);
    await page.getByText('Files added.').waitFor();
    assert.equal(await page.getByRole('link', { name: 'access-review.pdf' }).count(), 1);
    assert.equal(await page.getByRole('link', { name: 'restore-test.md' }).count(), 1);

    // A refused upload comes back as the form with its error, through the script too.
    await page.getByRole('link', { name: 'Add evidence' }).click();
    await page.getByLabel('Files', { exact: true }).setInputFiles({
      name: 'tool.exe',
      mimeType: 'application/octet-stream',
      buffer: Buffer.concat([Buffer.from('MZ'), Buffer.alloc(100, 1)]),
    });
    await page.getByRole('button', { name: 'Upload files' }).click();
    await page.locator('.error-summary').waitFor();
    assert.match(
      await page.locator('.error-summary').innerText(),
      /tool\.exe is not a type of file accepted/,
    );

    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Evidence' }).click();
    await page.getByRole('link', { name: 'access-review.pdf' }).click();
    const evidenceUrl = page.url();
    const download = page.waitForEvent('download');
    await page.getByRole('link', { name: 'Download file' }).click();
    assert.equal((await download).suggestedFilename(), 'access-review.pdf');

    await page.goto(`${workspace}/controls?q=A.7.1`);
    await page.getByRole('link', { name: 'A.7.1 Physical security perimeters' }).click();
    await page.waitForURL(`${workspace}/controls/A.7.1`);
    await page.getByLabel('Status', { exact: true }).selectOption('not_applicable');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('.error-summary').waitFor();
    await assertAccessible(page);
    await page.getByLabel('Justification of applicability').fill('No offices: all staff work remotely.');
    await page.getByLabel('Owner', { exact: true }).selectOption({ label: 'Grace Hopper' });
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Control updated.').waitFor();

    const pages = {
      evidence: `${workspace}/evidence`,
      'evidence-new': `${workspace}/evidence/new`,
      'evidence-record': evidenceUrl,
      control: `${workspace}/controls/A.5.15`,
      'control-excluded': `${workspace}/controls/A.7.1`,
      controls: `${workspace}/controls`,
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
    // The two refusals the test asked for, and nothing else.
    assert.deepEqual(consoleErrors, [
      'Failed to load resource: the server responded with a status of 415 (Unsupported Media Type)',
      'Failed to load resource: the server responded with a status of 400 (Bad Request)',
    ]);
  });
});
