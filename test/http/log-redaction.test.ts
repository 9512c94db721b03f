// db-scope: sqlite

import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import pino from 'pino';
import { loggerOptions } from '../../src/http/logging.ts';
import { logRequestCompleted, requestLogger } from '../../src/http/request-logger.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).trim().split('\n')) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino(loggerOptions('info'), sink), lines };
}

describe('log lines', () => {
  it('blank out secrets and addresses at the top level and one level down, without changing the logged objects', () => {
    const { logger, lines } = capture();
    const logged = {
      token: 'spt_secret',
      workspaceId: 'ws_1',
      buyer: { email: 'ada@example.com', plan: 'pro' },
      req: { headers: { authorization: 'Bearer svc_live_x', 'x-api-key': 'svc_live_y', accept: '*/*' } },
      err: Object.assign(new Error('boom'), { apiKey: 'svc_live_z' }),
    };
    logger.info(logged, 'something happened');
    const [line] = lines;
    assert.ok(line);
    assert.equal(line.token, '[redacted]');
    assert.equal(line.workspaceId, 'ws_1');
    assert.deepEqual(line.buyer, { email: '[redacted]', plan: 'pro' });
    assert.deepEqual(line.req, {
      headers: { authorization: '[redacted]', 'x-api-key': '[redacted]', accept: '*/*' },
    });
    const err = line.err as { message: string; apiKey: string; stack: string };
    assert.deepEqual([err.message, err.apiKey], ['boom', '[redacted]']);
    assert.match(err.stack, /boom/);
    assert.equal(logged.token, 'spt_secret');
    assert.equal(logged.buyer.email, 'ada@example.com');
    assert.equal(logged.err.apiKey, 'svc_live_z');
  });

  it('write the request completed line as pino writes it, and leave it to pino where a route has its own level or a stream wants levels', () => {
    const { logger, lines } = capture();
    const fields = { method: 'GET', route: '/api/v1/tasks/:id', status: 200, ms: 1.3 };
    logRequestCompleted(requestLogger(logger, { reqId: 'req_1"quoted"' }, {}), fields);
    logger.info({ reqId: 'req_1"quoted"', ...fields }, 'request completed');
    const [written, byPino] = lines;
    assert.ok(written && byPino);
    assert.deepEqual(Object.keys(written), Object.keys(byPino));
    assert.deepEqual({ ...written, time: 0 }, { ...byPino, time: 0 });
    assert.equal(written.reqId, 'req_1"quoted"');

    logRequestCompleted(requestLogger(logger, { reqId: 'req_2' }, { level: 'warn' }), fields);
    assert.equal(lines.length, 2, 'a route logging from warn on writes no info line');
    logger.level = 'warn';
    logRequestCompleted(requestLogger(logger, { reqId: 'req_2' }, {}), fields);
    assert.equal(lines.length, 2, 'a service logging from warn on (LOG_LEVEL=warn) writes no info line');

    // pino.multistream picks streams by the level pino hands it with each line.
    const warnings: string[] = [];
    const multi = pino(
      loggerOptions('info'),
      pino.multistream([{ level: 'warn', stream: { write: (line: string) => warnings.push(line) } }]),
    );
    multi.warn('before');
    logRequestCompleted(requestLogger(multi, { reqId: 'req_3' }, {}), fields);
    assert.deepEqual(
      warnings.map((line) => JSON.parse(line).msg),
      ['before'],
    );
  });
});
