// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SELLABLE_ITEMS } from '../../src/catalog/index.ts';
import { testDialect } from '../helpers/database.ts';
import { acceptAsNewAccount, startAppFixture, webClient } from '../helpers/web.ts';

describe(`public pages on ${testDialect}`, () => {
  it('says what the service is, lists the six plans at their catalog prices, and where agents and engineers start', async (t) => {
    const fixture = await startAppFixture(t);
    const home = await webClient(fixture.runtime.app).get('/');
    assert.equal(home.status, 200);
    assert.match(home.body, /ISO 27001 readiness workspaces/);
    assert.equal(SELLABLE_ITEMS.length, 6);
    for (const item of SELLABLE_ITEMS) {
      const dollars = (item.price.amount / 100).toLocaleString('en-US', {
        style: 'currency',
        currency: 'USD',
      });
      assert.match(
        home.body,
        new RegExp(
          `${dollars.replace('$', '\\$')}</span> for one (month|year) <span class="muted">\\(<code>${item.id}</code>`,
        ),
      );
    }
    for (const href of [
      '/.well-known/acp.json',
      '/.well-known/ucp',
      '/openapi.json',
      '/api/v1/docs',
      '/api/v1/openapi.json',
    ]) {
      assert.ok(home.body.includes(`href="${href}"`), href);
    }
  });

  it('answers every link the pages and the discovery documents publish', async (t) => {
    const fixture = await startAppFixture(t);
    const app = fixture.runtime.app;
    const client = webClient(app);
    const links = new Set<string>();
    for (const path of ['/', '/legal/terms', '/legal/privacy', '/sign-in']) {
      const page = await client.get(path);
      for (const [, href] of page.body.matchAll(/href="([^"]+)"/g))
        if (href?.startsWith('/')) links.add(href);
    }
    // The legal links every ACP and UCP checkout session carries, and the MPP document's homepage.
    links.add('/legal/terms').add('/legal/privacy').add('/');
    for (const link of links) {
      const answer = await app.inject({ url: link, headers: { accept: 'text/html' } });
      assert.ok([200, 303].includes(answer.statusCode), `${link} answered ${answer.statusCode}`);
    }
  });

  it('answers unknown paths with the HTML page for browsers and problem+json for everything else', async (t) => {
    const fixture = await startAppFixture(t);
    const app = fixture.runtime.app;
    const browser = await app.inject({
      url: '/no-such-page',
      headers: { accept: 'text/html,application/xhtml+xml' },
    });
    assert.equal(browser.statusCode, 404);
    assert.match(browser.headers['content-type'] ?? '', /^text\/html/);
    assert.match(browser.body, /<h1>Page not found<\/h1>/);

    const client = await app.inject({ url: '/no-such-page' });
    assert.equal(client.statusCode, 404);
    assert.equal(client.json().code, 'not_found');
    for (const url of ['/api/v1/nope', '/api/acp/nope', '/.well-known/nope']) {
      const machine = await app.inject({ url, headers: { accept: 'text/html' } });
      assert.equal(machine.statusCode, 404, url);
      assert.doesNotMatch(machine.headers['content-type'] ?? '', /text\/html/, url);
    }
  });

  it('answers a browser reopening the address of a form’s answer, or an address too long to route, with a page; other clients with problem+json', async (t) => {
    const fixture = await startAppFixture(t);
    const app = fixture.runtime.app;
    for (const url of ['/w/ws_06f1k2m3n4p5q6r7s8t9v0w1x2/integrations/keys', '/orders/ord_1/invitation']) {
      const browser = await app.inject({ url, headers: { accept: 'text/html,application/xhtml+xml' } });
      assert.equal(browser.statusCode, 405, url);
      assert.equal(browser.headers.allow, 'POST', url);
      assert.match(browser.headers['content-type'] ?? '', /^text\/html/, url);
      assert.match(browser.body, /<meta name="error-code" content="method_not_allowed">/, url);
      assert.match(browser.body, /This page cannot be opened again/, url);

      const client = await app.inject({ url });
      assert.equal(client.statusCode, 405, url);
      assert.equal(client.json().code, 'method_not_allowed', url);
    }
    const tooLong = `/invitations/inv_${'a'.repeat(3000)}`;
    const page = await app.inject({ url: tooLong, headers: { accept: 'text/html' } });
    assert.equal(page.statusCode, 414);
    assert.match(page.headers['content-type'] ?? '', /^text\/html/);
    assert.match(page.body, /<meta name="error-code" content="uri_too_long">/);
    assert.match(String(page.headers['request-id']), /^req_/);
    assert.equal(page.headers['x-content-type-options'], 'nosniff');
    assert.equal(page.headers['x-frame-options'], 'DENY');
    const problem = await app.inject({ url: tooLong });
    assert.deepEqual([problem.statusCode, problem.json().code], [414, 'uri_too_long']);

    const machine = await app.inject({
      url: '/api/v1/me',
      method: 'DELETE',
      headers: { accept: 'text/html' },
    });
    assert.equal(machine.statusCode, 405);
    assert.doesNotMatch(machine.headers['content-type'] ?? '', /text\/html/);
  });

  it('shows a signed-in person their own header on the pages answered before routing', async (t) => {
    const fixture = await startAppFixture(t);
    const { invitationPath } = await fixture.provision({ email: 'owner@example.com' });
    const owner = await acceptAsNewAccount(fixture.runtime.app, invitationPath);
    for (const [url, status] of [
      ['/no-such-page', 404],
      ['/orders/ord_1/invitation', 405],
      [`/invitations/inv_${'a'.repeat(3000)}`, 414],
    ] as const) {
      const page = await owner.get(url);
      assert.equal(page.status, status, url);
      assert.match(page.body, /Signed in as <strong>owner@example\.com<\/strong>/, url);
      assert.doesNotMatch(page.body, /<a href="\/sign-in">Sign in<\/a>/, url);
    }
    const stranger = await webClient(fixture.runtime.app).get('/no-such-page');
    assert.match(stranger.body, /<a href="\/sign-in">Sign in<\/a>/);
  });

  it('serves pages under a strict content security policy with no inline script or style', async (t) => {
    const fixture = await startAppFixture(t);
    const page = await webClient(fixture.runtime.app).get('/');
    const policy = String(page.headers['content-security-policy']);
    assert.match(policy, /default-src 'none'/);
    assert.match(policy, /script-src 'self'(;|$)/);
    assert.match(policy, /style-src 'self'(;|$)/);
    assert.match(policy, /form-action 'self'/);
    assert.match(policy, /frame-ancestors 'none'/);
    assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval/);
    assert.equal(page.headers['cache-control'], 'no-store');
    assert.doesNotMatch(page.body, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    assert.doesNotMatch(page.body, /<style|\sstyle=/, 'no inline style');

    const css = await fixture.runtime.app.inject({
      url: /href="(\/assets\/app\.css\?v=\w+)"/.exec(page.body)?.[1] ?? '',
    });
    assert.equal(css.statusCode, 200);
    assert.match(css.headers['content-type'] ?? '', /^text\/css/);
    assert.match(String(css.headers['cache-control']), /immutable/);
  });
});
