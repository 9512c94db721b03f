// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testDialect } from '../helpers/database.ts';
import { acceptAsNewAccount, signedInOwner, webClient } from '../helpers/web.ts';

function errorCodeOf(body: string): string | undefined {
  return /<meta name="error-code" content="([a-z_]+)">/.exec(body)?.[1];
}

/** The vendor names a list page shows, in order. */
function names(body: string): string[] {
  return [...body.matchAll(/<th scope="row" data-label="Vendor"><a href="[^"]+">([^<]+)<\/a>/g)].map(
    (m) => m[1] ?? '',
  );
}

const FORM = {
  name: 'Example Cloud Hosting',
  website: 'https://cloud.example.com',
  description: 'Production hosting.',
  risk_level: 'high',
  status: 'active',
  owner_id: '',
  next_review_date: '2027-06-30',
};

/** A calendar date `days` from the fixture's today. */
function dayFrom(today: Date, days: number): string {
  return new Date(today.getTime() + days * 86_400_000).toISOString().slice(0, 10);
}

describe(`the Vendors pages on ${testDialect}`, () => {
  it('creates, edits and deletes a vendor: the API sees it, and the history, audit log and webhooks tell who', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    const ada = (await owner.api('POST', '/people', { email: 'ada@example.com', name: 'Ada Lovelace' })).body;

    const empty = await client.get(`${page}/vendors`);
    assert.equal(empty.status, 200);
    assert.match(empty.body, /No vendors yet/);
    assert.match(empty.body, /aria-current="page">Vendors</);
    const form = await client.get(`${page}/vendors/new`);
    assert.equal(form.status, 200);
    assert.match(form.body, new RegExp(`<option value="${ada.id}">Ada Lovelace</option>`));

    const created = await client.post(`${page}/vendors`, { ...FORM, owner_id: ada.id });
    assert.equal(created.status, 303, created.body);
    const vendorUrl = created.location?.split('?')[0] ?? '';
    const vendorId = vendorUrl.split('/').at(-1) ?? '';
    const shown = await client.get(created.location ?? '');
    assert.match(shown.body, /Vendor created\./);
    assert.match(shown.body, /<dt>Owner<\/dt><dd>Ada Lovelace<\/dd>/);
    assert.match(
      shown.body,
      /<a class="url" href="https:\/\/cloud\.example\.com" rel="noopener noreferrer">/,
    );
    const viaApi = (await owner.api('GET', `/vendors/${vendorId}`)).body;
    assert.deepEqual(
      [
        viaApi.name,
        viaApi.website,
        viaApi.risk_level,
        viaApi.status,
        viaApi.owner_id,
        viaApi.next_review_date,
      ],
      [FORM.name, FORM.website, 'high', 'active', ada.id, '2027-06-30'],
    );

    const edited = await client.post(vendorUrl, {
      ...FORM,
      website: '',
      description: '',
      status: 'under_review',
      owner_id: '',
    });
    assert.equal(edited.status, 303, edited.body);
    const afterEdit = (await owner.api('GET', `/vendors/${vendorId}`)).body;
    assert.deepEqual(
      [afterEdit.website, afterEdit.description, afterEdit.status, afterEdit.owner_id],
      [null, null, 'under_review', null],
    );
    await owner.api('PATCH', `/vendors/${vendorId}`, { risk_level: 'critical' });

    const history = (await client.get(vendorUrl)).body;
    assert.match(history, /<strong>Vendor created<\/strong> by owner@example\.com/);
    assert.match(history, /<strong>Vendor changed<\/strong> by owner@example\.com/);
    assert.match(history, /<strong>Vendor changed<\/strong> by API key/);
    assert.match(history, /status: <del>Active<\/del> → <ins>Under review<\/ins>/);
    assert.match(history, /website: <del>https:\/\/cloud\.example\.com<\/del> → <ins>—<\/ins>/);
    assert.match(history, /data-confirm="Delete the vendor “Example Cloud Hosting”\?/);

    const deleted = await client.post(`${vendorUrl}/delete`, {});
    assert.equal(deleted.status, 303);
    assert.equal(deleted.location, `${page}/vendors?notice=deleted`);
    assert.match((await client.get(deleted.location ?? '')).body, /Vendor deleted\./);
    assert.equal((await owner.api('GET', `/vendors/${vendorId}`)).status, 404);

    const audit = (await owner.api('GET', `/audit-events?target_id=${vendorId}`)).body.data;
    assert.deepEqual(
      audit.map((event: { action: string }) => event.action),
      ['vendor.deleted', 'vendor.updated', 'vendor.updated', 'vendor.created'],
    );
    assert.deepEqual(
      audit.map((event: { actor: { label: string } }) => event.actor.label === 'owner@example.com'),
      [true, false, true, true],
    );
    const events = await owner.fixture.runtime.database.db
      .selectFrom('webhook_events')
      .select('type')
      .where('workspace_id', '=', owner.workspaceId)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      events.map((event) => event.type).filter((type) => type.startsWith('vendor.')),
      ['vendor.created', 'vendor.updated', 'vendor.updated', 'vendor.deleted'],
    );
  });

  it('lists vendors by status, risk level, owner and review due, searches, pages and exports CSV', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page, fixture } = owner;
    const today = fixture.runtime.clock.now();
    const ada = (await owner.api('POST', '/people', { email: 'ada@example.com', name: 'Ada' })).body;
    const make = async (body: object) => {
      const created = await owner.api('POST', '/vendors', body);
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body;
    };
    await make({ name: 'Late Payroll', next_review_date: dayFrom(today, -1), owner_id: ada.id });
    await make({
      name: 'Soon Hosting',
      website: 'https://soon.example',
      next_review_date: dayFrom(today, 30),
    });
    await make({ name: 'Later Mail', next_review_date: dayFrom(today, 31), risk_level: 'low' });
    await make({ name: '=HYPERLINK("https://evil.example")', status: 'offboarded', risk_level: 'critical' });

    const list = async (query: string) => names((await client.get(`${page}/vendors${query}`)).body);
    const evil = '=HYPERLINK(&quot;https://evil.example&quot;)';
    assert.deepEqual(await list(''), ['Late Payroll', 'Soon Hosting', 'Later Mail', evil]);
    assert.deepEqual(await list('?status=offboarded'), [evil]);
    assert.deepEqual(await list('?risk_level=low'), ['Later Mail']);
    assert.deepEqual(await list(`?owner_id=${ada.id}`), ['Late Payroll']);
    assert.deepEqual(await list('?review=overdue'), ['Late Payroll']);
    assert.deepEqual(await list('?review=due'), ['Late Payroll', 'Soon Hosting']);
    assert.deepEqual(await list('?q=soon.EXAMPLE'), ['Soon Hosting']);
    const listed = (await client.get(`${page}/vendors`)).body;
    assert.match(listed, /Review overdue<\/span>/);
    assert.match(listed, /Review due soon<\/span>/);
    assert.equal([...listed.matchAll(/class="badge badge-(warning|info)"/g)].length, 2);
    assert.match(listed, new RegExp(`<option value="${ada.id}">Ada</option>`), 'owner filter');

    const csv = await client.get(`${page}/vendors.csv?status=offboarded`);
    assert.equal(csv.status, 200);
    assert.match(String(csv.headers['content-type']), /^text\/csv/);
    const lines = csv.body.trim().split('\r\n');
    assert.equal(
      lines[0],
      'name,website,status,risk_level,owner,next_review_date,description,owner_id,updated_at,id',
    );
    assert.equal(lines.length, 2);
    assert.match(lines[1] ?? '', /^"'=HYPERLINK\(""https:\/\/evil\.example""\)",,offboarded,critical,,/);
    const late = (await client.get(`${page}/vendors.csv?review=overdue`)).body.trim().split('\r\n');
    assert.match(
      late[1] ?? '',
      new RegExp(`^Late Payroll,,active,medium,Ada,${dayFrom(today, -1)},,${ada.id},`),
    );

    for (let i = 0; i < 55; i++) await make({ name: `Bulk ${i}` });
    const first = await client.get(`${page}/vendors`);
    assert.equal(names(first.body).length, 50);
    const next = /<a href="([^"]+)" rel="next">/.exec(first.body)?.[1]?.replaceAll('&amp;', '&') ?? '';
    assert.equal(names((await client.get(next)).body).length, 9);

    for (const bad of [
      'status=gone',
      'risk_level=extreme',
      'review=soon',
      `q=${'x'.repeat(201)}`,
      'owner_id=%00',
    ]) {
      const refused = await client.get(`${page}/vendors?${bad}`);
      assert.equal(refused.status, 400, bad);
      assert.equal(errorCodeOf(refused.body), 'invalid_filter', bad);
    }
    const forged = await client.get(`${page}/vendors?cursor=bm9wZQ`);
    assert.deepEqual([forged.status, errorCodeOf(forged.body)], [400, 'invalid_cursor']);
  });

  it('answers bad input with the form again, and another workspace’s vendors with 404', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page, fixture } = owner;
    await client.get(`${page}/vendors/new`);
    const bad = await client.post(`${page}/vendors`, {
      ...FORM,
      name: ' ',
      website: 'cloud.example.com',
      risk_level: 'extreme',
      next_review_date: 'next year',
    });
    assert.equal(bad.status, 400);
    for (const message of [
      'Give the vendor a name',
      'Enter the website as a full http or https address',
      'Choose a risk level from the list',
      'Enter the review date as a date',
    ]) {
      assert.match(bad.body, new RegExp(message));
    }
    assert.match(bad.body, /id="website"[^>]*value="cloud\.example\.com"[^>]*aria-invalid="true"/);
    for (const website of ['javascript:alert(1)', 'http://', 'ftp://files.example.com']) {
      const refused = await client.post(`${page}/vendors`, { ...FORM, website });
      assert.equal(refused.status, 400, website);
    }
    const unknownPerson = await client.post(`${page}/vendors`, { ...FORM, owner_id: 'per_nobody' });
    assert.equal(unknownPerson.status, 400);
    assert.match(unknownPerson.body, /Choose the owner from the list/);
    const tooLong = await client.post(`${page}/vendors`, { ...FORM, name: 'x'.repeat(2000) });
    assert.equal(tooLong.status, 400);
    assert.equal((await owner.api('GET', '/vendors')).body.data.length, 0, 'nothing was created');

    const vendor = (await owner.api('POST', '/vendors', { name: 'Ours' })).body;
    const vendorUrl = `${page}/vendors/${vendor.id}`;
    await client.get(vendorUrl);
    const badEdit = await client.post(vendorUrl, { ...FORM, status: 'retired' });
    assert.equal(badEdit.status, 400);
    assert.match(badEdit.body, /Choose a status from the list/);
    assert.equal((await owner.api('GET', `/vendors/${vendor.id}`)).body.name, 'Ours');

    const other = await fixture.provision({ email: 'other@example.com' });
    const stranger = await acceptAsNewAccount(fixture.runtime.app, other.invitationPath);
    assert.equal((await stranger.get(vendorUrl)).status, 404);
    assert.equal((await stranger.get(`/w/${other.workspaceId}/vendors/${vendor.id}`)).status, 404);
    await stranger.get(`/w/${other.workspaceId}/vendors`);
    assert.equal((await stranger.post(`/w/${other.workspaceId}/vendors/${vendor.id}`, FORM)).status, 404);
    assert.equal(
      (await stranger.post(`/w/${other.workspaceId}/vendors/${vendor.id}/delete`, {})).status,
      404,
    );
    assert.equal((await owner.api('GET', `/vendors/${vendor.id}`)).body.name, 'Ours');
    const signedOut = await webClient(fixture.runtime.app).get(`${page}/vendors`);
    assert.equal(signedOut.status, 303);
    assert.match(signedOut.location ?? '', /^\/sign-in\?next=/);
  });
});
