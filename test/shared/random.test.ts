// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId, newSecret, secureRandomBytes } from '../../src/shared/ids.ts';

describe('secure random bytes from the pool', () => {
  it('never hands out the same bytes twice, across many refills of the pool', () => {
    const seen = new Set<string>();
    // 20,000 draws of 12 bytes: about 59 refills of a 4 KB pool.
    for (let i = 0; i < 20_000; i++) {
      const bytes = secureRandomBytes(12);
      assert.equal(bytes.length, 12);
      seen.add(bytes.toString('hex'));
    }
    assert.equal(seen.size, 20_000);
  });

  it('gives each caller a buffer of its own, which a later draw does not change', () => {
    const first = secureRandomBytes(32);
    const copy = Buffer.from(first);
    for (let i = 0; i < 1_000; i++) secureRandomBytes(32);
    assert.deepEqual(first, copy);
    assert.notDeepEqual(first, Buffer.alloc(32));
  });

  it('serves sizes larger than the pool straight from the generator', () => {
    assert.equal(secureRandomBytes(10_000).length, 10_000);
  });

  it('makes secrets and ids that do not repeat', () => {
    const secrets = new Set(Array.from({ length: 5_000 }, () => newSecret('sk_')));
    assert.equal(secrets.size, 5_000);
    const at = new Date('2026-11-28T00:00:00Z');
    const ids = Array.from({ length: 5_000 }, () => newId('ctl', at));
    assert.equal(new Set(ids).size, 5_000);
    assert.deepEqual([...ids].sort(), ids, 'ids made in one millisecond still sort in order');
  });
});
