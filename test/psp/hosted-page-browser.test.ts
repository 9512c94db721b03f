// db-scope: sqlite

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import Stripe from 'stripe';
import { startPspSandbox } from '../../src/psp/sandbox/main.ts';
import { assertAccessible, collectConsoleErrors, launchBrowser } from '../helpers/browser.ts';

const SECRET_KEY = 'sk_test_hosted_page_browser';

/** The merchant's pages the hosted page returns to: any path answers a small HTML page. */
async function startMerchant(t: TestContext): Promise<string> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(
      '<!doctype html><html lang="en"><title>Merchant</title><h1>Back at the merchant</h1></html>',
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('the hosted checkout page in Chromium', () => {
  it('declines, asks for 3-D Secure, pays and returns to the merchant, accessible at each step', async (t) => {
    const browser = await launchBrowser(t);
    const merchant = await startMerchant(t);
    const sandbox = await startPspSandbox({ secretKey: SECRET_KEY });
    t.after(() => sandbox.close());
    const stripe = new Stripe(SECRET_KEY, {
      host: '127.0.0.1',
      port: new URL(sandbox.url).port,
      protocol: 'http',
      maxNetworkRetries: 0,
      telemetry: false,
    });
    const session = await stripe.checkout.sessions.create({
      mode: 'payment',
      line_items: [
        {
          quantity: 1,
          price_data: {
            currency: 'usd',
            unit_amount: 29_900,
            product_data: { name: 'Pro plan, annual', description: 'One year of the Pro plan' },
          },
        },
      ],
      success_url: `${merchant}/billing/return?session_id={CHECKOUT_SESSION_ID}`,
      cancel_url: `${merchant}/billing`,
      customer_email: 'owner@example.com',
    });

    const page = await browser.newPage();
    const consoleErrors = collectConsoleErrors(page);
    await page.goto(String(session.url));
    await assertAccessible(page);
    assert.equal(await page.getByLabel('Email').inputValue(), 'owner@example.com');

    await page.locator('input[name=card_number]').fill('4000 0000 0000 0002');
    await page.locator('button[type=submit]', { hasText: 'Pay' }).click();
    assert.equal(await page.locator('[role=alert]').innerText(), 'Your card was declined.');
    await assertAccessible(page);

    await page.locator('input[name=card_number]').fill('4000 0027 6000 3184');
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.waitForURL(`${sandbox.url}/pay/${session.id}/authenticate`);
    await assertAccessible(page);
    await page.getByRole('button', { name: 'Complete authentication' }).click();
    await page.waitForURL(`${merchant}/billing/return?session_id=${session.id}`);

    assert.equal((await stripe.checkout.sessions.retrieve(session.id)).payment_status, 'paid');
    await page.goto(String(session.url));
    await assertAccessible(page);
    await page.getByRole('link', { name: 'Return to the merchant' }).click();
    await page.waitForURL(`${merchant}/billing/return?session_id=${session.id}`);
    assert.deepEqual(consoleErrors, []);
  });
});
