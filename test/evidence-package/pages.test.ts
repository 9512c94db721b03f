// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testDialect } from '../helpers/database.ts';
import { acceptAsNewAccount, signedInOwner } from '../helpers/web.ts';

describe(`the evidence package pages on ${testDialect}`, () => {
  it('refuse bad ranges on the form, answer 409 before the package is ready and 404 to other workspaces', async (t) => {
    const { fixture, client, page } = await signedInOwner(t);
    const packages = `${page}/evidence-packages`;
    assert.equal((await client.get(packages)).status, 200);

    const refusals: [Record<string, string>, RegExp][] = [
      [{ from: '2026-02-10', to: '2026-02-01' }, /must not be after the last day/],
      [{ from: '1990-01-01', to: '2026-01-01' }, /at most 1098 days/],
      [{ from: '2026-02-30', to: '' }, /Enter a date as YYYY-MM-DD/],
      [{ from: 'soon', to: '' }, /Enter a date as YYYY-MM-DD/],
    ];
    for (const [form, message] of refusals) {
      const refused = await client.post(packages, form);
      assert.equal(refused.status, 400, JSON.stringify(form));
      assert.match(refused.body, message);
      assert.match(refused.body, /class="error-summary"/);
    }
    assert.equal((await client.post(packages, { from: 'x'.repeat(500) })).status, 400);

    const requested = await client.post(packages, { from: '2026-01-01', to: '' });
    assert.equal(requested.status, 303);
    const packagePage = requested.location ?? '';
    assert.match(packagePage, /\/evidence-packages\/epk_\w+$/);
    const waiting = await client.get(packagePage);
    assert.equal(waiting.status, 200);
    assert.match(waiting.body, /Waiting to start/);
    assert.match(waiting.body, /data-refresh-seconds="2"/);
    const early = await client.get(`${packagePage}/download`);
    assert.equal(early.status, 409);
    assert.match(early.body, /still being built/);

    await fixture.runtime.jobs.drain();
    const ready = await client.get(packagePage);
    assert.match(ready.body, /Ready to download/);
    assert.doesNotMatch(ready.body, /data-refresh-seconds/);
    const zip = await client.get(`${packagePage}/download`);
    assert.equal(zip.status, 200);
    assert.equal(zip.headers['content-type'], 'application/zip');
    assert.match(
      String(zip.headers['content-disposition']),
      /evidence-package-2026-01-01-to-2026-03-01\.zip/,
    );

    const other = await fixture.provision({ email: 'mallory@example.com', name: 'Other Ltd' });
    const mallory = await acceptAsNewAccount(fixture.runtime.app, other.invitationPath);
    const packageId = packagePage.split('/').at(-1);
    for (const url of [
      `/w/${other.workspaceId}/evidence-packages/${packageId}`,
      `/w/${other.workspaceId}/evidence-packages/${packageId}/download`,
      packagePage,
    ]) {
      assert.equal((await mallory.get(url)).status, 404, url);
    }
  });
});
