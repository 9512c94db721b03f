// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createRuntime } from '../../src/runtime.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { capturedLogger } from '../helpers/logs.ts';
import { startTestRuntime } from '../helpers/runtime.ts';

describe('HTTP basics', () => {
  it('answers /healthz and /readyz', async (t) => {
    const { app } = await startTestRuntime(t);
    const health = await app.inject({ method: 'GET', url: '/healthz' });
    assert.deepEqual([health.statusCode, health.json()], [200, { status: 'ok' }]);
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    assert.deepEqual([ready.statusCode, ready.json()], [200, { status: 'ready' }]);
  });

  it('is not ready when the database is gone', async (t) => {
    const runtime = await startTestRuntime(t);
    await runtime.app.ready();
    await runtime.database.close();
    runtime.database.close = async () => {};
    const ready = await runtime.app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(ready.statusCode, 503);
    assert.equal(ready.json().status, 'database_unreachable');
  });

  it('echoes a well-formed Request-Id and generates one otherwise', async (t) => {
    const { app } = await startTestRuntime(t);
    const echoed = await app.inject({
      method: 'GET',
      url: '/healthz',
      headers: { 'request-id': 'agent-42.retry-1' },
    });
    assert.equal(echoed.headers['request-id'], 'agent-42.retry-1');
    const generated = await app.inject({ method: 'GET', url: '/healthz' });
    assert.match(String(generated.headers['request-id']), /^req_[0-9a-f-]{36}$/);
    const hostile = await app.inject({
      method: 'GET',
      url: '/healthz',
      headers: { 'request-id': 'x\u0007<script>' },
    });
    assert.match(String(hostile.headers['request-id']), /^req_/);
  });

  it('sends security headers', async (t) => {
    const { app } = await startTestRuntime(t);
    const res = await app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['x-frame-options'], 'DENY');
    assert.equal(res.headers['referrer-policy'], 'no-referrer');
    assert.match(String(res.headers['content-security-policy']), /default-src 'none'/);
  });

  it('answers unknown paths with a JSON 404 and wrong methods with a 405 and Allow', async (t) => {
    const { app } = await startTestRuntime(t);
    const missing = await app.inject({ method: 'GET', url: '/nowhere' });
    assert.equal(missing.statusCode, 404);
    assert.match(String(missing.headers['content-type']), /^application\/problem\+json/);
    assert.equal(missing.json().code, 'not_found');
    assert.equal(missing.json().request_id, missing.headers['request-id']);
    const wrong = await app.inject({ method: 'DELETE', url: '/healthz' });
    assert.equal(wrong.statusCode, 405);
    assert.equal(wrong.headers.allow, 'GET');
    assert.equal(wrong.json().code, 'method_not_allowed');
  });

  it('rejects a body over the configured limit with 413', async (t) => {
    const { app } = await startTestRuntime(t, { env: { BODY_LIMIT_BYTES: '2048' } });
    app.post('/echo', async (request) => request.body);
    const post = (payload: string, contentType = 'application/json') =>
      app.inject({ method: 'POST', url: '/echo', headers: { 'content-type': contentType }, payload });
    const small = await post(JSON.stringify({ pad: 'x'.repeat(100) }));
    assert.equal(small.statusCode, 200);
    const large = await post(JSON.stringify({ pad: 'x'.repeat(4096) }));
    assert.deepEqual([large.statusCode, large.json().code], [413, 'body_too_large']);
    const broken = await post('{"pad":');
    assert.deepEqual([broken.statusCode, broken.json().code], [400, 'invalid_json']);
    const xml = await post('<a/>', 'application/xml');
    assert.deepEqual([xml.statusCode, xml.json().code], [415, 'unsupported_media_type']);
  });

  it('logs JSON lines with route patterns and redacted secrets, never raw URLs', async (t) => {
    const { logger, lines } = capturedLogger('info');
    const database = await createTestDatabase();
    t.after(() => database.close());
    const config = loadConfig({ NODE_ENV: 'test' });
    const runtime = await createRuntime(config, {
      clock: new ManualClock(),
      database,
      logger,
    });
    t.after(() => runtime.close());
    runtime.app.get('/probe/:secret', async (request) => {
      request.log.info({ headers: { authorization: 'Bearer svc_live_leak' }, token: 'spt_leak' }, 'probe');
      request.log.warn('probe warned');
      request.log.child({ step: 'inner' }).info('probe inner');
      return { ok: true };
    });
    const response = await runtime.app.inject({ method: 'GET', url: '/probe/cs_supersecret?x=1' });
    const entries = lines.map((line) => JSON.parse(line));
    const completed = entries.find((e) => e.msg === 'request completed');
    assert.equal(completed.route, '/probe/:secret');
    assert.equal(completed.status, 200);
    // Every line of the request names it, however it was logged.
    const requestId = response.headers['request-id'];
    for (const msg of ['probe', 'probe warned', 'probe inner', 'request completed']) {
      assert.equal(entries.find((e) => e.msg === msg)?.reqId, requestId, msg);
    }
    assert.equal(entries.find((e) => e.msg === 'probe inner')?.step, 'inner');
    const all = lines.join('\n');
    assert.doesNotMatch(all, /cs_supersecret|svc_live_leak|spt_leak/);
    assert.match(all, /\[redacted\]/);
  });
});
