// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isEmailAddress } from '../../src/shared/email.ts';
import { DELIVERABLE_ADDRESSES, UNDELIVERABLE_ADDRESSES } from '../fixtures/email-addresses.ts';

describe('the email rule', () => {
  it('accepts addresses a mail server can deliver to, in any script', () => {
    for (const address of DELIVERABLE_ADDRESSES) assert.ok(isEmailAddress(address), address);
  });

  it('refuses empty or doubled dots, hyphens at label edges, a short or numeric TLD, quoting, controls and overlong parts', () => {
    for (const address of UNDELIVERABLE_ADDRESSES)
      assert.equal(isEmailAddress(address), false, JSON.stringify(address));
  });

  it('counts the length limits in UTF-8 octets: 64 for the local part, 254 in all', () => {
    assert.equal(isEmailAddress(`${'ü'.repeat(33)}@example.com`), false);
    assert.equal(isEmailAddress(`${'ü'.repeat(32)}@example.com`), true);
    const longest = `${'a'.repeat(59)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(62)}.com`;
    assert.equal(longest.length, 254);
    assert.equal(isEmailAddress(longest), true);
    assert.equal(isEmailAddress(`a${longest}`), false);
  });
});
