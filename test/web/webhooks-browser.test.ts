// db-scope: sqlite (on postgres: test/web/webhooks.test.ts)

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertAccessible, collectConsoleErrors, launchBrowser } from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { startAppFixture } from '../helpers/web.ts';
import { verifyAt } from '../webhooks/fixture.ts';
import { startReceiver } from '../webhooks/receiver.ts';

const PASSWORD = 'correct horse battery staple';

describe(`Integrations in Chromium on ${testDialect}`, () => {
  it('rotates a key, subscribes a receiver, copies the secret, redelivers, pauses and rotates the secret', async (t) => {
    const browser = await launchBrowser(t);
    const fixture = await startAppFixture(t, { listen: true, env: { WEBHOOK_ALLOW_LOOPBACK: 'true' } });
    const receiver = await startReceiver(t);
    const base = fixture.baseUrl;
    await browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    const { workspaceId, invitationPath } = await fixture.provision({
      email: 'ada@example.com',
      name: 'Acme Ltd',
    });
    const page = await browser.newPage();
    const consoleErrors = collectConsoleErrors(page);
    const copySecret = async () => {
      await page.getByRole('button', { name: 'Copy secret' }).click();
      await page.getByText('Copied to the clipboard.').waitFor();
      // biome-ignore lint/suspicious/noExplicitAny: navigator is a global of the page
      const copied: string = await page.evaluate(() => (globalThis as any).navigator.clipboard.readText());
      assert.equal(copied, await page.locator('#new-secret-value').innerText());
      return copied;
    };

    await page.goto(`${base}${invitationPath}`);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await page.waitForURL(`${base}/w/${workspaceId}`);

    // An API key, rotated with an hour of overlap; the new one triggers the events below.
    await page.goto(`${base}/w/${workspaceId}/integrations`);
    await page.getByLabel('Name').fill('Agent');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#new-key-value').waitFor();
    await page.getByRole('link', { name: 'Rotate Agent' }).click();
    await assertAccessible(page);
    await page.getByLabel('In 1 hour').check();
    await page.getByRole('button', { name: 'Rotate key' }).click();
    const apiKey = await page.locator('#new-key-value').innerText();
    assert.match(await page.locator('tbody').innerText(), /Active until 1 Mar 2026, 13:00 UTC \(replaced\)/);
    await assertAccessible(page);

    // A refused address is a form error; the receiver on loopback is accepted.
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await assertAccessible(page);
    await page.getByLabel('URL', { exact: true }).fill('https://10.0.0.1/hooks');
    await page.getByLabel('task.created', { exact: true }).check();
    await page.getByRole('button', { name: 'Create subscription' }).click();
    await page.locator('.error-summary').waitFor();
    assert.match(
      await page.locator('.error-summary').innerText(),
      /The URL 10\.0\.0\.1 is a private address; webhooks are only sent to public addresses\./,
    );
    await assertAccessible(page);
    await page.getByLabel('URL', { exact: true }).fill(`${receiver.url}/hooks`);
    await page.getByRole('button', { name: 'Create subscription' }).click();
    await page.locator('#new-secret-value').waitFor();
    await assertAccessible(page);
    const secret = await copySecret();
    assert.match(secret, /^whsec_/);

    const createTask = async (title: string) => {
      const answer = await fetch(`${base}/api/v1/tasks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ title }),
      });
      assert.equal(answer.status, 201);
      await fixture.runtime.jobs.drain();
    };
    await createTask('Write the access control policy');
    const [first] = await receiver.waitFor(1);
    assert.ok(first && verifyAt(t, secret, first), 'signed with the copied secret');

    await page.getByRole('link', { name: 'Open the subscription' }).click();
    const rows = page.locator('#deliveries tbody tr');
    assert.match(await rows.first().innerText(), /task\.created[\s\S]*Succeeded[\s\S]*1[\s\S]*HTTP 204/);
    await page.getByText('Details').first().click();
    await assertAccessible(page);

    await page.getByRole('button', { name: /^Redeliver/ }).click();
    await page.waitForURL(/#deliveries$/);
    await fixture.runtime.jobs.drain();
    const [, second] = await receiver.waitFor(2);
    assert.equal(second?.headers['webhook-id'], first.headers['webhook-id'], 'the same event again');
    await page.reload();
    assert.equal(await rows.count(), 2);
    assert.match(await rows.first().innerText(), /task\.created[\s\S]*Succeeded[\s\S]*HTTP 204/);

    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    assert.match(await page.locator('.summary').innerText(), /Status\s+Paused/);
    await createTask('Sent while paused');
    assert.equal(receiver.requests.length, 2, 'nothing is sent while paused');

    await page.getByLabel('The old secret keeps signing').selectOption('1h');
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.locator('#new-secret-value').waitFor();
    await assertAccessible(page);
    const newSecret = await copySecret();
    assert.notEqual(newSecret, secret);
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    await createTask('Sent after the rotation');
    const [, , third] = await receiver.waitFor(3);
    assert.ok(third && verifyAt(t, newSecret, third), 'signed with the new secret');
    assert.ok(verifyAt(t, secret, third), 'and, during the hour of grace, with the old one');

    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    await assertAccessible(page);
    assert.deepEqual(
      consoleErrors.filter((error) => !/status of 40[0-9]/.test(error)),
      [],
    );
  });
});
