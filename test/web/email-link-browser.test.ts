// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  EMAIL_CHANGE_LINK,
  PASSWORD,
  RESET_LINK,
  SIGN_IN_LINK,
  startAccountMailFixture,
} from '../helpers/account-mail.ts';
import { assertAccessible, collectConsoleErrors, launchBrowser } from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';

describe(`email links in Chromium on ${testDialect}`, () => {
  it('signs in with an emailed link end to end, and every new page passes axe on a phone', async (t) => {
    const browser = await launchBrowser(t, { viewport: { width: 390, height: 844 } });
    const fixture = await startAccountMailFixture(t, { listen: true });
    await fixture.createAccount('ada@example.com');
    const base = fixture.baseUrl;
    const page = await browser.newPage();
    const consoleErrors = collectConsoleErrors(page);

    await page.goto(`${base}/sign-in`);
    await page.getByRole('link', { name: 'Email me a sign-in link' }).click();
    await page.waitForURL(`${base}/sign-in/email`);
    await assertAccessible(page);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await page.locator('.error-summary').waitFor();
    await assertAccessible(page);
    await page.getByLabel('Email address').fill('ada@example.com');
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await page.getByRole('heading', { name: 'Check your email' }).waitFor();
    await assertAccessible(page);

    const signInLink = `${base}${await fixture.latestLinkPath('ada@example.com', SIGN_IN_LINK)}`;
    await page.goto(signInLink);
    await assertAccessible(page);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/(w\/ws_[^/]+|workspaces)$/);
    assert.match(await page.locator('.who').innerText(), /ada@example.com/);

    await page.getByRole('link', { name: 'Account' }).click();
    await page.waitForURL(`${base}/account`);
    await assertAccessible(page);
    await page.getByLabel('New email address').fill('ada@new.example');
    await page.locator('#email-password').fill('not my password');
    await page.getByRole('button', { name: 'Send a confirmation link' }).click();
    await page.locator('.error-summary').waitFor();
    await assertAccessible(page);
    await page.locator('#email-password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Send a confirmation link' }).click();
    await page.getByText('We sent a confirmation link to ada@new.example').waitFor();
    await assertAccessible(page);

    await page.goto(`${base}${await fixture.latestLinkPath('ada@new.example', EMAIL_CHANGE_LINK)}`);
    await assertAccessible(page);
    await page.getByRole('button', { name: 'Confirm the new address' }).click();
    await page.getByRole('heading', { name: 'Your email address was changed' }).waitFor();
    await assertAccessible(page);

    await page.goto(signInLink);
    assert.equal(await page.locator('h1').innerText(), 'This link no longer works');
    await assertAccessible(page);

    await page.goto(`${base}/password-reset`);
    await assertAccessible(page);
    await page.getByLabel('Email address').fill('ada@new.example');
    await page.getByRole('button', { name: 'Email me a reset link' }).click();
    await page.getByRole('heading', { name: 'Check your email' }).waitFor();
    await page.goto(`${base}${await fixture.latestLinkPath('ada@new.example', RESET_LINK)}`);
    await assertAccessible(page);
    await page.getByLabel('New password').fill('a brand new passphrase');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.waitForURL(`${base}/account?done=password`);
    await page.getByText('Your password was changed').waitFor();

    assert.deepEqual(
      consoleErrors.filter((error) => !/status of 4[0-9][0-9]/.test(error)),
      [],
    );
  });
});
