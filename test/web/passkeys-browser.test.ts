// db-scope: sqlite (on postgres: test/web/passkeys.test.ts)

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertAccessible, collectConsoleErrors, launchBrowser } from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { freePort, startAppFixture } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';

describe(`passkeys in Chromium on ${testDialect}`, () => {
  it('registers a passkey in the account, signs in with it without an address, removes it', async (t) => {
    const browser = await launchBrowser(t);
    // WebAuthn needs a domain as RP ID (an IP address is refused), and http is allowed only on
    // localhost: the service is reached as localhost, which Chromium resolves to loopback.
    const port = await freePort();
    const fixture = await startAppFixture(t, { env: { BASE_URL: `http://localhost:${port}` } });
    await fixture.runtime.app.listen({ port, host: '127.0.0.1' });
    const base = fixture.baseUrl;
    const { invitationPath } = await fixture.provision({ email: 'ada@example.com' });

    const page = await browser.newPage();
    const consoleErrors = collectConsoleErrors(page);
    const devtools = await browser.newCDPSession(page);
    await devtools.send('WebAuthn.enable');
    const { authenticatorId } = await devtools.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
      },
    });

    await page.goto(`${base}${invitationPath}`);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await page.waitForURL(/\/w\/ws_/);

    await page.getByRole('link', { name: 'Passkeys' }).click();
    await page.waitForURL(`${base}/account/passkeys`);
    assert.match(await page.locator('main').innerText(), /You have no passkeys yet/);
    await assertAccessible(page);
    await page.getByLabel('Name').fill('Work laptop');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByRole('cell', { name: 'Work laptop', exact: true }).waitFor();
    await assertAccessible(page);
    const { credentials } = await devtools.send('WebAuthn.getCredentials', { authenticatorId });
    assert.equal(credentials.length, 1);
    assert.equal(credentials[0]?.isResidentCredential, true, 'a discoverable credential');
    assert.equal(credentials[0]?.rpId, 'localhost');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${base}/`);
    await page.goto(`${base}/sign-in`);
    await assertAccessible(page);
    await page.getByRole('button', { name: 'Use a passkey' }).click();
    await page.waitForURL(/\/(w\/ws_[^/]+|workspaces)$/);
    assert.match(await page.locator('.who').innerText(), /ada@example\.com/);

    await page.goto(`${base}/account/passkeys`);
    const row = page.getByRole('row', { name: /Work laptop/ });
    assert.doesNotMatch(await row.innerText(), /Never/, 'the last use is shown');
    const stored = await fixture.runtime.database.db
      .selectFrom('passkeys')
      .select(['counter', 'last_used_at'])
      .executeTakeFirstOrThrow();
    assert.ok(stored.last_used_at !== null);
    assert.ok(Number(stored.counter) > 0, 'the signature counter the authenticator sent is kept');

    await page.getByRole('link', { name: 'Remove Work laptop' }).click();
    await page.getByRole('heading', { name: /Remove the passkey “Work laptop”/ }).waitFor();
    await assertAccessible(page);
    await page.getByRole('button', { name: 'Remove passkey' }).click();
    await page.waitForURL(`${base}/account/passkeys`);
    assert.match(await page.locator('main').innerText(), /You have no passkeys yet/);

    // The authenticator still holds the credential, but the service no longer knows it.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${base}/`);
    await page.goto(`${base}/sign-in`);
    await page.getByRole('button', { name: 'Use a passkey' }).click();
    await page.locator('.error-summary').waitFor();
    assert.match(await page.locator('.error-summary').innerText(), /not registered here/);
    await assertAccessible(page);

    await devtools.send('Emulation.setScriptExecutionDisabled', { value: true });
    await page.goto(`${base}/sign-in`);
    assert.match(await page.locator('main').innerText(), /Signing in with a passkey needs JavaScript/);
    assert.equal(await page.getByRole('button', { name: 'Use a passkey' }).isVisible(), false);
    assert.equal(await page.getByRole('button', { name: 'Sign in', exact: true }).isVisible(), true);

    assert.deepEqual(
      consoleErrors.filter((error) => !/status of 40[0-9]/.test(error)),
      [],
    );
  });
});
