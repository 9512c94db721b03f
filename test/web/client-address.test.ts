// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { ATTEMPTS_PER_CLIENT } from '../../src/accounts/index.ts';
import { testDialect } from '../helpers/database.ts';
import { type AppFixture, startAppFixture, webClient } from '../helpers/web.ts';

/**
 * A failed sign-in for `email` reaching the service from `remoteAddress` with `forwardedFor`; the
 * audit log's event for it is the one with `label` as its user agent.
 */
async function failSignIn(
  app: FastifyInstance,
  request: { label: string; email?: string; remoteAddress: string; forwardedFor?: string },
): Promise<number> {
  const browser = webClient(app);
  await browser.get('/sign-in');
  const response = await app.inject({
    method: 'POST',
    url: '/sign-in',
    remoteAddress: request.remoteAddress,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      origin: 'http://svc.test',
      cookie: [...browser.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
      'user-agent': request.label,
      ...(request.forwardedFor === undefined ? {} : { 'x-forwarded-for': request.forwardedFor }),
    },
    payload: new URLSearchParams({
      _csrf: browser.csrfToken(),
      email: request.email ?? `${request.label}@example.com`,
      password: 'a wrong password',
    }).toString(),
  });
  return response.statusCode;
}

async function recordedAddresses(fixture: AppFixture, label: string): Promise<(string | null)[]> {
  const events = await fixture.runtime.database.db
    .selectFrom('audit_events')
    .select('ip')
    .where('action', '=', 'account.sign_in_failed')
    .where('user_agent', '=', label)
    .execute();
  return events.map((event) => event.ip);
}

describe(`the client address behind proxies on ${testDialect}`, () => {
  it('is the address the trusted balancer saw: forged X-Forwarded-For values change neither the throttle nor the audit log', async (t) => {
    const fixture = await startAppFixture(t, { env: { TRUST_PROXY: '10.0.0.5' } });
    const app = fixture.runtime.app;
    // The balancer appends the address it saw to whatever the client sent.
    const through = (attempt: number) => ({
      label: 'guesser',
      email: `user${attempt}@example.com`,
      remoteAddress: '10.0.0.5',
      forwardedFor: `198.51.100.${attempt}, 203.0.113.7`,
    });
    for (let attempt = 1; attempt <= ATTEMPTS_PER_CLIENT; attempt++) {
      assert.equal(await failSignIn(app, through(attempt)), 401);
    }
    assert.equal(await failSignIn(app, through(ATTEMPTS_PER_CLIENT + 1)), 429);
    const recorded = await recordedAddresses(fixture, 'guesser');
    assert.equal(recorded.length, ATTEMPTS_PER_CLIENT);
    assert.deepEqual(new Set(recorded), new Set(['203.0.113.7']));
  });

  it('walks back through the trusted proxies to the first address it does not trust', async (t) => {
    const fixture = await startAppFixture(t, { env: { TRUST_PROXY: '10.0.0.0/8, fd00::/8' } });
    const cases = [
      // Two proxies of the network; a value written before them is the client's own.
      { forwardedFor: '198.51.100.1, 203.0.113.7, 10.0.0.9', expected: '203.0.113.7' },
      // A client that writes a proxy's address first gains nothing.
      { forwardedFor: '10.0.0.7, 203.0.113.8', expected: '203.0.113.8' },
      { forwardedFor: '2001:db8::1, fd00::2', expected: '2001:db8::1' },
      // Every address trusted: the first one is all that is known.
      { forwardedFor: '10.0.0.3', expected: '10.0.0.3' },
    ];
    for (const [index, { forwardedFor, expected }] of cases.entries()) {
      const label = `case${index}`;
      assert.equal(
        await failSignIn(fixture.runtime.app, { label, remoteAddress: '10.0.0.5', forwardedFor }),
        401,
      );
      assert.deepEqual(await recordedAddresses(fixture, label), [expected], forwardedFor);
    }
    const direct = { label: 'direct', remoteAddress: '203.0.113.50', forwardedFor: '198.51.100.1' };
    assert.equal(await failSignIn(fixture.runtime.app, direct), 401);
    assert.deepEqual(
      await recordedAddresses(fixture, 'direct'),
      ['203.0.113.50'],
      'a client not behind a proxy',
    );
  });

  it('ignores X-Forwarded-For without TRUST_PROXY', async (t) => {
    const fixture = await startAppFixture(t);
    const request = { label: 'untrusting', remoteAddress: '10.0.0.5', forwardedFor: '203.0.113.7' };
    assert.equal(await failSignIn(fixture.runtime.app, request), 401);
    assert.deepEqual(await recordedAddresses(fixture, 'untrusting'), ['10.0.0.5']);
  });
});
