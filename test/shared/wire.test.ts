import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { iso } from '../../src/shared/wire.ts';

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
