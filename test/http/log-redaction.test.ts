// db-scope: sqlite

import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import pino from 'pino';
import { loggerOptions } from '../../src/http/logging.ts';

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
});
