// db-scope: sqlite (on postgres: test/evidence-package/pages.test.ts)

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { createApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import {
  assertAccessible,
  collectConsoleErrors,
  launchBrowser,
  scrollsSideways,
} from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { startAppFixture } from '../helpers/web.ts';
import { checkedManifest, readZip } from './read-zip.ts';

const PASSWORD = 'correct horse battery staple';
/** Where to save a screenshot of each page, when set (to look at them). */
const SHOTS_DIR = process.env.SHOTS_DIR;
const POLICY = Buffer.from('# Information security policy\n\nApproved by the board.\n');

describe(`the evidence package pages in Chromium on ${testDialect}`, () => {
  it('requests a package, watches its progress page update itself and downloads the zip', async (t) => {
    const browser = await launchBrowser(t);
    const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-package-web-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const fixture = await startAppFixture(t, { listen: true, env: { DATA_DIR: dataDir } });
    const base = fixture.baseUrl;
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    const key = await createApiKey(
      fixture.runtime.database.db,
      fixture.runtime.clock,
      { workspaceId, name: 'uploads' },
      OPERATOR_SOURCE,
    );
    assert.ok(key.ok);
    const form = new FormData();
    form.append('file', new Blob([POLICY]), 'policy.md');
    const uploaded = await fetch(`${base}/api/v1/evidence`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.value.key}` },
      body: form,
    });
    assert.equal(uploaded.status, 201);
    const workspace = `${base}/w/${workspaceId}`;

    const page = await browser.newPage();
    const consoleErrors = collectConsoleErrors(page);
    await page.goto(`${base}${invitationPath}`);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await page.waitForURL(workspace);
    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Evidence' }).click();
    await page.getByRole('link', { name: 'Evidence packages for the auditor' }).click();
    await page.waitForURL(`${workspace}/evidence-packages`);

    // Upside down: the form again, with its error.
    await page.getByLabel('First day').fill('2026-02-10');
    await page.getByLabel('Last day').fill('2026-02-01');
    await page.getByRole('button', { name: 'Build the package' }).click();
    await page.locator('.error-summary').waitFor();
    assert.match(await page.locator('.error-summary').innerText(), /must not be after the last day/);
    await assertAccessible(page);

    await page.getByLabel('First day').fill('');
    await page.getByLabel('Last day').fill('');
    await page.getByRole('button', { name: 'Build the package' }).click();
    await page.waitForURL(/\/evidence-packages\/epk_\w+$/);
    const packageUrl = page.url();
    await page.getByText('Waiting to start').waitFor();
    await assertAccessible(page);
    if (SHOTS_DIR)
      await page.screenshot({ path: path.join(SHOTS_DIR, 'evidence-package-waiting.png'), fullPage: true });

    // The job runs; the page, updating itself in place, shows the package ready. The document and
    // its status region are the same ones (marked with properties no reload or swap would keep).
    await page.evaluate(`window.sameDocument = true;
      document.querySelector('#package [role="status"]').sameRegion = true`);
    await fixture.runtime.jobs.drain();
    await page.getByText('Ready to download').waitFor({ timeout: 15_000 });
    assert.equal(page.url(), packageUrl);
    assert.equal(
      await page.evaluate(
        `window.sameDocument && document.querySelector('#package [role="status"]').sameRegion`,
      ),
      true,
    );
    assert.match(await page.locator('#package [role="status"]').innerText(), /^Ready to download$/);
    await assertAccessible(page);
    const download = page.waitForEvent('download');
    await page.getByRole('link', { name: /Download the package/ }).click();
    const file = await download;
    assert.match(file.suggestedFilename(), /^evidence-package-2026-\d\d-\d\d\.zip$/);
    const entries = await readZip(await file.path());
    const manifest = checkedManifest(entries);
    assert.deepEqual(
      manifest.files.map((entry) => entry.path),
      [
        'statement-of-applicability/current.csv',
        'statement-of-applicability/current.xlsx',
        'statement-of-applicability/current.pdf',
        'risk-treatment-plan/current.csv',
        'risk-treatment-plan/current.xlsx',
        'risk-treatment-plan/current.pdf',
        'controls/Not linked to a control/policy.md',
        'evidence.csv',
        'links.csv',
      ],
    );
    const policy = entries.find((entry) => entry.path === 'controls/Not linked to a control/policy.md');
    assert.ok(policy?.bytes?.equals(POLICY));

    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      for (const [name, url] of Object.entries({
        'evidence-packages': `${workspace}/evidence-packages`,
        'evidence-package': packageUrl,
      })) {
        await page.goto(url);
        await assertAccessible(page);
        assert.equal(await scrollsSideways(page), false, `${name} is wider than ${width} px`);
        if (SHOTS_DIR) {
          const suffix = width === 1280 ? '' : `-${width}`;
          await page.screenshot({ path: path.join(SHOTS_DIR, `${name}${suffix}.png`), fullPage: true });
        }
      }
    }
    assert.deepEqual(consoleErrors, [
      'Failed to load resource: the server responded with a status of 400 (Bad Request)',
    ]);
  });
});
