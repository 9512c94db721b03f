// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalJson } from '../../src/shared/jcs.ts';

describe('JSON canonicalization (RFC 8785)', () => {
  it('sorts keys at every depth and drops whitespace', () => {
    assert.equal(
      canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'x' } }),
      '{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('gives equal text for semantically equal bodies and different text for different ones', () => {
    assert.equal(
      canonicalJson({ amount: 1.0, currency: 'usd' }),
      canonicalJson({ currency: 'usd', amount: 1 }),
    );
    assert.notEqual(canonicalJson({ a: null }), canonicalJson({}));
    assert.notEqual(canonicalJson([1, 2]), canonicalJson([2, 1]));
  });

  it('matches the RFC 8785 sample for numbers and strings', () => {
    assert.equal(
      canonicalJson({
        // biome-ignore lint/correctness/noPrecisionLoss: the RFC's own sample, which JCS must round
        numbers: [333333333.33333329, 1e30, 4.5, 0.002, 1e-27],
        string: '€$\u000f\nA\'B"\\\\"/',
        literals: [null, true, false],
      }),
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('sorts keys by UTF-16 code units', () => {
    assert.equal(
      canonicalJson({ '\u20ac': 1, '\r': 2, '\ud83d\ude00': 3, '1': 4 }),
      '{"\\r":2,"1":4,"€":1,"😀":3}',
    );
  });
});
