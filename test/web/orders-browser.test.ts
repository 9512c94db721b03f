// db-scope: sqlite (on postgres: test/web/orders.test.ts)

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { assertAccessible, collectConsoleErrors, launchBrowser } from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { startWebFixture } from '../helpers/web.ts';

const BUYER_EMAIL = 'ada.buyer@example.com';
const MASKED = 'a***@example.com';

describe(`the order page in Chromium on ${testDialect}`, () => {
  it('in Chromium: no serious accessibility violation, and the resend button works under no-referrer', async (t: TestContext) => {
    const browser = await launchBrowser(t);
    const fixture = await startWebFixture(t);
    const { orderUrl } = await fixture.buyWorkspace(BUYER_EMAIL);
    const page = await browser.newPage();
    const errors = collectConsoleErrors(page);
    await page.goto(orderUrl);
    await assertAccessible(page);
    await page.getByRole('button', { name: 'Send the invitation again' }).click();
    await page.getByText(`A fresh invitation is on its way to ${MASKED}.`).waitFor();
    await assertAccessible(page);
    assert.deepEqual(errors, []);
  });
});
