// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nextRetryDelay, RETRY_DELAYS_MS, retryAfterMs } from '../../src/webhooks/schedule.ts';

const now = new Date('2026-03-01T12:00:00.000Z');

describe('the webhook retry schedule', () => {
  it('jitters each step by at most 20% and stops after the last', () => {
    for (const [index, step] of RETRY_DELAYS_MS.entries()) {
      assert.equal(
        nextRetryDelay(index + 1, undefined, () => 0),
        Math.round(step * 0.8),
      );
      assert.equal(
        nextRetryDelay(index + 1, undefined, () => 1),
        Math.round(step * 1.2),
      );
    }
    assert.equal(nextRetryDelay(RETRY_DELAYS_MS.length + 1, undefined), null);
  });

  it('reads Retry-After as seconds or an HTTP date, clamped to [0, one day]', () => {
    assert.equal(retryAfterMs('120', now), 120_000);
    assert.equal(retryAfterMs(' 0 ', now), 0);
    assert.equal(retryAfterMs('Sun, 01 Mar 2026 13:00:00 GMT', now), 3_600_000);
    assert.equal(retryAfterMs('Sun, 01 Mar 2026 11:00:00 GMT', now), 0);
    assert.equal(retryAfterMs('99999999', now), 86_400_000);
    assert.equal(retryAfterMs('-5', now), undefined);
    assert.equal(retryAfterMs('later', now), undefined);
    assert.equal(retryAfterMs(null, now), undefined);
  });
});
