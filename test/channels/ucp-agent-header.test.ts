import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDictionary, requestedVersion } from '../../src/channels/ucp/agent-header.ts';

describe('UCP-Agent header', () => {
  it('reads the version from a parameter of the profile member or from a member of its own', () => {
    assert.deepEqual(requestedVersion('profile="https://a.example/.well-known/ucp"; version="2026-08-25"'), {
      kind: 'requested',
      version: '2026-08-25',
    });
    assert.deepEqual(requestedVersion('profile="https://a.example/.well-known/ucp";version="2025-01-01"'), {
      kind: 'requested',
      version: '2025-01-01',
    });
    assert.deepEqual(requestedVersion('profile="https://a.example/p", version="2026-04-08"'), {
      kind: 'requested',
      version: '2026-04-08',
    });
  });

  it('has no version when the header or its version is absent', () => {
    assert.deepEqual(requestedVersion(undefined), { kind: 'none' });
    assert.deepEqual(requestedVersion('   '), { kind: 'none' });
    assert.deepEqual(requestedVersion('profile="https://a.example/.well-known/ucp"'), { kind: 'none' });
  });

  it('reports a version that is not a string as requested, so it is refused rather than ignored', () => {
    assert.deepEqual(requestedVersion('profile="p"; version=2026'), { kind: 'requested', version: '2026' });
    assert.deepEqual(requestedVersion('version=v2'), { kind: 'requested', version: 'v2' });
  });

  it('rejects what RFC 8941 does not allow', () => {
    for (const header of [
      'profile=https://a.example/p; version=2026-08-25',
      'Profile="p"',
      'profile="unterminated',
      'profile="p",',
      'profile="p" version="2026-08-25"',
      'profile="bad \\n escape"',
      'profile="p";',
      '=x',
    ]) {
      assert.deepEqual(requestedVersion(header), { kind: 'malformed' }, header);
    }
  });

  it('parses every RFC 8941 item type in a dictionary', () => {
    const parsed = parseDictionary(
      'a=1, b=-2.5, c="q\\"uote", d=tok/en:1, e=:aGk=:, f=?0, g, h=(1 "x");p=1, i;x="y"',
    );
    assert.ok(parsed);
    assert.deepEqual(
      [...parsed.entries()].map(([name, member]) => [name, member.item]),
      [
        ['a', { kind: 'number', value: 1 }],
        ['b', { kind: 'number', value: -2.5 }],
        ['c', { kind: 'string', value: 'q"uote' }],
        ['d', { kind: 'token', value: 'tok/en:1' }],
        ['e', { kind: 'bytes', value: 'aGk=' }],
        ['f', { kind: 'boolean', value: false }],
        ['g', { kind: 'boolean', value: true }],
        ['h', { kind: 'inner_list' }],
        ['i', { kind: 'boolean', value: true }],
      ],
    );
    assert.deepEqual(parsed.get('i')?.params.get('x'), { kind: 'string', value: 'y' });
    assert.deepEqual(parsed.get('h')?.params.get('p'), { kind: 'number', value: 1 });
  });
});
