// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { longDate, renderOwnerInvitation } from '../../src/mail/templates.ts';

describe('mail dates', () => {
  it('write every UTC day as the en-US long date, whatever the hour', () => {
    const intl = new Intl.DateTimeFormat('en-US', { dateStyle: 'long', timeZone: 'UTC' });
    const day = 86_400_000;
    // From 1901 to 2119, each day at a different hour, the last millisecond of a day included.
    for (let i = -25_000; i < 55_000; i++) {
      const date = new Date(i * day + ((i % 24) * 3_600_000 || day - 1));
      assert.equal(longDate(date), intl.format(date));
    }
  });

  it('refuse an invalid date, as Intl does, rather than mail "undefined NaN, NaN"', () => {
    assert.throws(() => longDate(new Date(Number.NaN)), RangeError);
  });

  it('put the term end and the link expiry of an owner invitation in UTC', () => {
    const mail = renderOwnerInvitation({
      workspaceName: 'Acme',
      planName: 'Pro',
      termEndsAt: new Date('2027-01-31T23:59:59.999Z'),
      acceptUrl: 'https://svc.example/invitations/inv_x',
      expiresAt: new Date('2026-12-01T00:00:00.000Z'),
    });
    assert.match(mail.text, /prepaid until January 31, 2027 \(UTC\)/);
    assert.match(mail.text, /expires on December 1, 2026 \(UTC\)/);
  });
});
