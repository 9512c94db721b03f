// db-scope: sqlite (on postgres: test/web/auditors.test.ts)

import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { readZip } from '../evidence-package/read-zip.ts';
import {
  assertAccessible,
  collectConsoleErrors,
  launchBrowser,
  scrollsSideways,
} from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { startWebFixture } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';
const AUDITOR = 'iris@audit-firm.example';
/** Where to save a screenshot of the auditor's pages, when set (to look at them). */
const SHOTS_DIR = process.env.SHOTS_DIR;

describe(`auditor access in Chromium on ${testDialect}`, () => {
  it('an owner invites an auditor, who accepts from the email, signs in, reads the controls and downloads an evidence file', async (t) => {
    const ownerBrowser = await launchBrowser(t);
    const auditorBrowser = await launchBrowser(t);
    const fixture = await startWebFixture(t);
    const base = fixture.baseUrl;
    const { invitationUrl, workspaceId } = await fixture.buyWorkspace('owner@example.com');
    const workspace = `${base}/w/${workspaceId}`;

    const owner = await ownerBrowser.newPage();
    await owner.goto(invitationUrl);
    await owner.getByLabel('New password').fill(PASSWORD);
    await owner.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await owner.waitForURL(workspace);
    await owner.goto(`${workspace}/evidence/new`);
    await owner.getByLabel('Files', { exact: true }).setInputFiles({
      name: 'access-review.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('Quarterly access review: every account checked.\n'),
    });
    await owner.getByRole('button', { name: 'Upload files' }).click();
    await owner.waitForURL(/notice=uploaded/);

    await owner
      .getByRole('navigation', { name: 'Workspace' })
      .getByRole('link', { name: 'Auditors' })
      .click();
    await owner.waitForURL(`${workspace}/auditors`);
    await owner.getByLabel('Email address').fill(AUDITOR);
    await owner.getByLabel('Access until').fill('2026-12-31');
    await owner.getByRole('button', { name: 'Send invitation' }).click();
    await owner.getByText('Invitation sent.').waitFor();
    assert.match(await owner.locator('tbody tr', { hasText: AUDITOR }).innerText(), /31 Dec 2026/);
    await assertAccessible(owner);

    // The link arrives at the SMTP peer; the auditor creates an account with it.
    const link = await fixture.latestInvitationUrl(AUDITOR);
    const auditor = await auditorBrowser.newPage();
    const consoleErrors = collectConsoleErrors(auditor);
    await auditor.goto(link);
    assert.match(await auditor.locator('main').innerText(), /audit the workspace: you can read its controls/);
    await auditor.getByLabel('New password').fill(PASSWORD);
    await auditor.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await auditor.waitForURL(`${workspace}/controls`);

    // Signed out and in again, the workspace opens at its controls.
    await auditor.getByRole('button', { name: 'Sign out' }).click();
    await auditor.goto(`${base}/sign-in`);
    await auditor.getByLabel('Email address').fill(AUDITOR);
    await auditor.getByLabel('Password').fill(PASSWORD);
    await auditor.getByRole('button', { name: 'Sign in' }).click();
    await auditor.waitForURL(`${workspace}/controls`);
    const nav = auditor.getByRole('navigation', { name: 'Workspace' });
    assert.deepEqual(await nav.getByRole('link').allInnerTexts(), [
      'Controls',
      'Statement of Applicability',
      'Evidence',
      'Risks',
      'Policies',
    ]);
    assert.equal(await auditor.getByRole('button', { name: /^Save/ }).count(), 0);
    await assertAccessible(auditor);
    assert.equal(await scrollsSideways(auditor), false);
    if (SHOTS_DIR)
      await auditor.screenshot({ path: path.join(SHOTS_DIR, 'auditor-controls.png'), fullPage: true });

    await auditor.getByRole('link', { name: 'A.5.15 Access control' }).click();
    await auditor.waitForURL(`${workspace}/controls/A.5.15`);
    assert.equal(await auditor.locator('form[method="post"]').count(), 1, 'only the sign-out form');
    await assertAccessible(auditor);

    await nav.getByRole('link', { name: 'Evidence' }).click();
    await auditor.getByRole('link', { name: 'access-review.txt' }).click();
    await assertAccessible(auditor);
    if (SHOTS_DIR)
      await auditor.screenshot({ path: path.join(SHOTS_DIR, 'auditor-evidence.png'), fullPage: true });
    const download = auditor.waitForEvent('download');
    await auditor.getByRole('link', { name: 'Download file' }).click();
    assert.equal((await download).suggestedFilename(), 'access-review.txt');

    // The Statement of Applicability, read-only: no approval for an auditor.
    await nav.getByRole('link', { name: 'Statement of Applicability' }).click();
    await auditor.waitForURL(`${workspace}/soa`);
    assert.match(await auditor.locator('main').innerText(), /A\.5\.15/);
    assert.equal(await auditor.getByRole('button', { name: /Approve/ }).count(), 0);
    await assertAccessible(auditor);
    assert.equal(await scrollsSideways(auditor), false);
    if (SHOTS_DIR)
      await auditor.screenshot({ path: path.join(SHOTS_DIR, 'auditor-soa.png'), fullPage: true });

    // The evidence package: requested, built, downloaded, with the SoA and the file inside.
    await nav.getByRole('link', { name: 'Evidence' }).click();
    await auditor.getByRole('link', { name: 'Evidence packages' }).click();
    await auditor.getByRole('button', { name: 'Build the package' }).click();
    await auditor.waitForURL(/\/evidence-packages\/epk_\w+$/);
    await fixture.runtime.jobs.drain();
    await auditor.getByText('Ready to download').waitFor({ timeout: 15_000 });
    const zip = auditor.waitForEvent('download');
    await auditor.getByRole('link', { name: /Download the package/ }).click();
    const paths = (await readZip(await (await zip).path())).map((entry) => entry.path);
    assert.ok(paths.includes('statement-of-applicability/current.pdf'), paths.join(', '));
    assert.ok(paths.includes('manifest.json'));
    assert.ok(
      paths.some((entry) => entry.endsWith('/access-review.txt')),
      paths.join(', '),
    );

    // Members is not theirs to open, even by its address.
    const members = await auditor.goto(`${workspace}/members`);
    assert.equal(members?.status(), 403);

    // The owner reads the visit and the download in the audit log.
    await owner.goto(`${workspace}/audit`);
    const log = await owner.locator('main').innerText();
    assert.match(log, /Auditor downloaded a file/);
    assert.match(log, /Auditor opened a page/);
    assert.match(log, /Evidence package downloaded/);
    assert.deepEqual(consoleErrors, [
      'Failed to load resource: the server responded with a status of 403 (Forbidden)',
    ]);
  });
});
