// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseWorkspaceName, WORKSPACE_NAME_PATTERN } from '../../src/workspace/index.ts';

describe('the workspace name rule', () => {
  const pattern = new RegExp(WORKSPACE_NAME_PATTERN, 'u');
  const names = [
    'Acme',
    '  Acme  ',
    '\tAcme\n',
    'A',
    ' ',
    '',
    'x'.repeat(100),
    ` ${'x'.repeat(100)} `,
    'x'.repeat(101),
    `${'🙂'.repeat(100)}`,
    `${'🙂'.repeat(101)}`,
    'Acme\nLtd',
    'Acme\tLtd',
    'Acme\u0000',
    'Acme\u007f',
    'Acme\u009f',
    '\u202eevil',
    'a\u2069b',
    '\ud800',
    'Ünïcödé GmbH & Co. KG',
    'a b',
    '\u00a0Acme\u00a0',
    '\u3000',
  ];

  it('is the same in the REST schema pattern and in parseWorkspaceName', () => {
    for (const name of names) {
      assert.equal(pattern.test(name), parseWorkspaceName(name).ok, JSON.stringify(name));
    }
  });

  it('trims, and names why a name is refused', () => {
    assert.deepEqual(parseWorkspaceName('  Acme Ltd '), { ok: true, value: 'Acme Ltd' });
    const reasons = ['', 'x'.repeat(101), 'a\nb', '\u202eevil'].map((name) => {
      const result = parseWorkspaceName(name);
      return result.ok ? 'ok' : result.error.reason;
    });
    assert.deepEqual(reasons, ['empty', 'too_long', 'refused_characters', 'refused_characters']);
  });
});
