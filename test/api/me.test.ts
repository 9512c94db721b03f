// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DAY_MS } from '../../src/shared/clock.ts';
import { endElapsedTerms } from '../../src/workspace/index.ts';
import { startApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

describe(`GET /api/v1/me on ${testDialect}`, () => {
  it('names the organization of the key, its plan, its non-renewing term and the key', async (t) => {
    const api = await startApiFixture(t);
    const me = await api.call('GET', '/me');
    assert.equal(me.status, 200);
    assert.deepEqual(me.body, {
      organization: { id: api.org.workspaceId, name: 'Acme Ltd' },
      plan: 'pro',
      term: {
        plan: 'pro',
        term: 'year',
        starts_at: '2026-03-01T12:00:00.000Z',
        ends_at: '2027-03-01T12:00:00.000Z',
        renews: false,
      },
      api_key: { id: api.org.keyId, name: 'test key', prefix: api.org.key.slice(0, 'svc_live_'.length + 4) },
    });
    assert.ok(!JSON.stringify(me.body).includes(api.org.key), 'the key itself is never answered');
  });

  it('answers each key with its own organization', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other Org');
    const [mine, theirs] = await Promise.all([
      api.call('GET', '/me'),
      api.call('GET', '/me', { key: other.key }),
    ]);
    assert.deepEqual(
      [mine.body.organization, theirs.body.organization],
      [
        { id: api.org.workspaceId, name: 'Acme Ltd' },
        { id: other.workspaceId, name: 'Other Org' },
      ],
    );
  });

  it('shows the Free plan and no term once the term has ended', async (t) => {
    const api = await startApiFixture(t);
    api.runtime.clock.advance(366 * DAY_MS);
    await endElapsedTerms(api.runtime.database.db, {
      clock: api.runtime.clock,
      baseUrl: api.runtime.config.baseUrl,
    });
    const me = await api.call('GET', '/me');
    assert.deepEqual([me.status, me.body.plan, me.body.term], [200, 'free', null]);
  });
});
