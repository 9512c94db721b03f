// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { epochMsOf, iso } from '../../src/shared/wire.ts';

describe('RFC 3339 timestamps of the REST API', () => {
  it('read exactly as Date#toISOString, at every field width and outside four-digit years', () => {
    const samples = [
      0,
      Date.UTC(2026, 0, 1, 0, 0, 0, 0),
      Date.UTC(2026, 11, 31, 23, 59, 59, 999),
      Date.UTC(2027, 1, 28, 9, 5, 7, 5),
      Date.UTC(2028, 1, 29, 10, 10, 10, 50),
      Date.UTC(999, 5, 1),
      Date.UTC(10000, 0, 1),
      -1,
    ];
    for (let i = 0; i < 10_000; i++) samples.push(Math.floor(Math.random() * 4_102_444_800_000));
    for (const epochMs of samples)
      assert.equal(iso(epochMs), new Date(epochMs).toISOString(), String(epochMs));
  });
});

describe('reading an RFC 3339 time', () => {
  it('takes offsets and fractions, and a leap second as the instant after second 59', () => {
    assert.equal(epochMsOf('2026-06-30T23:59:59.5+01:00'), Date.UTC(2026, 5, 30, 22, 59, 59, 500));
    assert.equal(epochMsOf('2016-12-31T23:59:60Z'), Date.UTC(2017, 0, 1));
    assert.equal(epochMsOf('2016-12-31t23:59:60.250z'), Date.UTC(2017, 0, 1, 0, 0, 0, 250));
    assert.equal(epochMsOf('2016-12-31T18:59:60-05:00'), Date.UTC(2017, 0, 1));
  });
});
