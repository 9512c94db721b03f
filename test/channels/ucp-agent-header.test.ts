// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requestedVersion } from '../../src/channels/ucp/agent-header.ts';

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

  // The hand-written parser's own representation was tested here; structured-headers now parses
  // the field, so what is tested is that every RFC 9651 item type around the version is accepted.
  it('reads the version beside members of every RFC 9651 item type', () => {
    assert.deepEqual(
      requestedVersion(
        'a=1, b=-2.5, c="q\\"uote", d=tok/en:1, e=:aGk=:, f=?0, g, h=(1 "x");p=1, i;x="y", ' +
          'profile="https://a.example/p";version="2026-04-08"',
      ),
      { kind: 'requested', version: '2026-04-08' },
    );
  });

  // RFC 9651 §3.3.7 (Date) and §3.3.8 (Display String) are item types RFC 8941 did not have; the
  // hand-written RFC 8941 parser called them malformed.
  it('accepts the Date and Display String items of RFC 9651', () => {
    assert.deepEqual(
      requestedVersion('profile="p";version="2026-08-25", note=%"caf%c3%a9", seen=@1767225600'),
      {
        kind: 'requested',
        version: '2026-08-25',
      },
    );
    assert.deepEqual(requestedVersion('version=@1767225600'), { kind: 'requested', version: '@1767225600' });
  });
});
