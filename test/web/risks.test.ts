// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testDialect } from '../helpers/database.ts';
import { acceptAsNewAccount, type SignedInOwner, signedInOwner, webClient } from '../helpers/web.ts';

function errorCodeOf(body: string): string | undefined {
  return /<meta name="error-code" content="([a-z_]+)">/.exec(body)?.[1];
}

/** The risk titles a register page shows, in order. */
function titles(body: string): string[] {
  return [...body.matchAll(/<th scope="row" data-label="Risk"><a href="[^"]+">([^<]+)<\/a>/g)].map(
    (m) => m[1] ?? '',
  );
}

/** The count in each cell of the risk map, `LxI`, and the link a non-empty cell has. */
function mapCells(body: string): Map<string, { count: number; link: string | undefined }> {
  return new Map(
    [
      ...body.matchAll(
        /data-likelihood="(\d)" data-impact="(\d)">(?:<a href="([^"]+)">)?(\d+)(?:<span[^>]*>[^<]*<\/span><\/a>)? <span class="heat-severity">(\w+)<\/span>/g,
      ),
    ].map((m) => [`${m[1]}x${m[2]}`, { count: Number(m[4]), link: m[3]?.replaceAll('&amp;', '&') }]),
  );
}

async function controlIds(owner: SignedInOwner, references: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const reference of references) {
    ids.push((await owner.api('GET', `/controls?q=${reference}`)).body.data[0].id);
  }
  return ids;
}

const FULL_FORM = {
  title: 'Laptop theft exposes customer data',
  description: 'Unencrypted disks on staff laptops.',
  likelihood: '3',
  impact: '4',
  owner_id: '',
  treatment: 'mitigate',
  treatment_plan: 'Full-disk encryption through device management.',
  residual_likelihood: '1',
  residual_impact: '4',
  due_date: '2026-12-31',
  status: 'open',
};

describe(`the Risks pages on ${testDialect}`, () => {
  it('creates, edits, treats and deletes a risk: the API sees it, and the history, audit log and webhooks tell who', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    const ada = (await owner.api('POST', '/people', { email: 'ada@example.com', name: 'Ada Lovelace' })).body;
    const [accessControl, malware, backup] = await controlIds(owner, ['A.5.15', 'A.8.7', 'A.8.13']);

    const empty = await client.get(`${page}/risks`);
    assert.equal(empty.status, 200);
    assert.match(empty.body, /No risks yet/);
    assert.match(empty.body, /No open risks to map/);
    assert.match(empty.body, /aria-current="page">Risks</);
    const form = await client.get(`${page}/risks/new`);
    assert.equal(form.status, 200);
    assert.match(form.body, /<label for="control-[^"]+">A\.5\.15 Access control<\/label>/);
    assert.equal([...form.body.matchAll(/name="control_ids"/g)].length, 93, 'every Annex A control');
    assert.match(form.body, /<summary>Technological <span class="muted">\(34 controls, 0 chosen\)/);

    const created = await client.post(`${page}/risks`, {
      ...FULL_FORM,
      owner_id: ada.id,
      control_ids: [malware ?? '', accessControl ?? ''],
    });
    assert.equal(created.status, 303, created.body);
    const riskUrl = created.location?.split('?')[0] ?? '';
    const riskId = riskUrl.split('/').at(-1) ?? '';
    const shown = await client.get(created.location ?? '');
    assert.match(shown.body, /Risk created\./);
    assert.match(shown.body, /Ada Lovelace/);
    assert.match(
      shown.body,
      /Score before treatment<\/dt><dd><span class="badge severity-high">12 High<\/span>/,
    );
    assert.match(shown.body, /Score after treatment<\/dt><dd><span class="badge severity-low">4 Low<\/span>/);
    assert.match(shown.body, /<details class="control-group" open>/);
    const viaApi = (await owner.api('GET', `/risks/${riskId}`)).body;
    assert.deepEqual(
      [viaApi.title, viaApi.score, viaApi.residual_score, viaApi.treatment, viaApi.owner_id, viaApi.due_date],
      [FULL_FORM.title, 12, 4, 'mitigate', ada.id, '2026-12-31'],
    );
    assert.deepEqual(viaApi.control_ids, [accessControl, malware].sort());

    const edited = await client.post(riskUrl, {
      ...FULL_FORM,
      likelihood: '5',
      owner_id: '',
      residual_likelihood: '',
      treatment_plan: '',
      control_ids: backup ?? '',
    });
    assert.equal(edited.status, 303, edited.body);
    const afterEdit = (await owner.api('GET', `/risks/${riskId}`)).body;
    assert.deepEqual(
      [afterEdit.score, afterEdit.owner_id, afterEdit.residual_likelihood, afterEdit.residual_score],
      [20, null, null, null],
    );
    assert.equal(afterEdit.treatment_plan, null);
    assert.deepEqual(afterEdit.control_ids, [backup]);
    const closed = await client.post(riskUrl, {
      ...FULL_FORM,
      likelihood: '5',
      residual_likelihood: '',
      treatment_plan: '',
      control_ids: backup ?? '',
      status: 'closed',
    });
    assert.equal(closed.status, 303);
    await owner.api('PATCH', `/risks/${riskId}`, { description: 'Stolen from cars, mostly.' });

    const history = (await client.get(riskUrl)).body;
    assert.match(history, /Score after treatment<\/dt><dd>Not rated yet/);
    assert.match(history, /<strong>Risk created<\/strong> by owner@example\.com/);
    assert.equal([...history.matchAll(/<strong>Risk changed<\/strong> by owner@example\.com/g)].length, 2);
    assert.match(history, /<strong>Risk changed<\/strong> by API key/);
    assert.match(history, /likelihood: <del>3<\/del> → <ins>5<\/ins>/);
    assert.match(history, /owner: <del>Ada Lovelace<\/del> → <ins>—<\/ins>/);
    assert.match(
      history,
      /<li>status: <del>Open<\/del> → <ins>Closed<\/ins><\/li>\s*<\/ul>/,
      'only the status',
    );
    assert.match(history, /data-confirm="Delete the risk “Laptop theft exposes customer data”\?/);

    const deleted = await client.post(`${riskUrl}/delete`, {});
    assert.equal(deleted.status, 303);
    assert.equal(deleted.location, `${page}/risks?notice=deleted`);
    assert.match((await client.get(deleted.location ?? '')).body, /Risk deleted\./);
    assert.equal((await owner.api('GET', `/risks/${riskId}`)).status, 404);
    assert.equal((await client.get(riskUrl)).status, 404);

    const audit = (await owner.api('GET', `/audit-events?target_id=${riskId}`)).body.data;
    assert.deepEqual(
      audit.map((event: { action: string; actor: { label: string } }) => [event.action, event.actor.label]),
      [
        ['risk.deleted', 'owner@example.com'],
        ['risk.updated', audit[1].actor.label],
        ['risk.updated', 'owner@example.com'],
        ['risk.updated', 'owner@example.com'],
        ['risk.created', 'owner@example.com'],
      ],
    );
    assert.match(audit[1].actor.label, /API key/);
    const events = await owner.fixture.runtime.database.db
      .selectFrom('webhook_events')
      .select('type')
      .where('workspace_id', '=', owner.workspaceId)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      events.map((event) => event.type).filter((type) => type.startsWith('risk.')),
      ['risk.created', 'risk.updated', 'risk.updated', 'risk.updated', 'risk.deleted'],
    );
  });

  it('lists the register most severe first, maps the open risks, filters, searches, pages and exports CSV', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    const ada = (await owner.api('POST', '/people', { email: 'ada@example.com', name: 'Ada' })).body;
    const [accessControl] = await controlIds(owner, ['A.5.15']);
    const make = async (body: object) => {
      const created = await owner.api('POST', '/risks', body);
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body;
    };
    await make({ title: 'Phishing', likelihood: 4, impact: 3, owner_id: ada.id, treatment: 'mitigate' });
    await make({
      title: 'Flood',
      description: 'River next door',
      likelihood: 1,
      impact: 5,
      treatment: 'transfer',
    });
    await make({
      title: '=HYPERLINK("https://evil.example")',
      likelihood: 5,
      impact: 5,
      control_ids: [accessControl],
      status: 'closed',
    });
    await make({ title: 'Shared admin accounts', likelihood: 4, impact: 3, control_ids: [accessControl] });

    const list = async (query: string) => titles((await client.get(`${page}/risks${query}`)).body);
    const evil = '=HYPERLINK(&quot;https://evil.example&quot;)';
    assert.deepEqual(await list(''), [evil, 'Shared admin accounts', 'Phishing', 'Flood']);
    assert.deepEqual(await list('?status=open'), ['Shared admin accounts', 'Phishing', 'Flood']);
    assert.deepEqual(await list('?status=closed'), [evil]);
    assert.deepEqual(await list('?severity=high'), ['Shared admin accounts', 'Phishing']);
    assert.deepEqual(await list('?treatment=transfer'), ['Flood']);
    assert.deepEqual(await list(`?owner_id=${ada.id}`), ['Phishing']);
    assert.deepEqual(await list(`?control_id=${accessControl}`), [evil, 'Shared admin accounts']);
    assert.deepEqual(await list('?q=river'), ['Flood']);
    assert.deepEqual(await list('?owner_id=per_nobody'), []);

    const register = await client.get(`${page}/risks`);
    assert.match(register.body, /Open risks by likelihood and impact \(3 in all\)/);
    assert.match(register.body, /<span class="badge severity-critical">25 Critical<\/span>/);
    assert.match(register.body, new RegExp(`<option value="${ada.id}">Ada</option>`), 'owner filter');
    const cells = mapCells(register.body);
    assert.equal(cells.size, 25);
    assert.deepEqual(cells.get('4x3'), {
      count: 2,
      link: `${page}/risks?status=open&likelihood=4&impact=3`,
    });
    assert.deepEqual(cells.get('5x5'), { count: 0, link: undefined }, 'closed risks are not mapped');
    assert.equal(cells.get('1x5')?.count, 1);
    assert.match(
      register.body,
      /data-likelihood="5" data-impact="5">0 <span class="heat-severity">critical<\/span>/,
    );
    assert.deepEqual(await list('?status=open&likelihood=4&impact=3'), ['Shared admin accounts', 'Phishing']);

    const csv = await client.get(`${page}/risks.csv?status=closed`);
    assert.equal(csv.status, 200);
    assert.match(String(csv.headers['content-type']), /^text\/csv/);
    const lines = csv.body.trim().split('\r\n');
    assert.equal(
      lines[0],
      'title,status,likelihood,impact,score,severity,treatment,treatment_plan,residual_likelihood,residual_impact,residual_score,due_date,owner,controls,description,owner_id,updated_at,id',
    );
    assert.equal(lines.length, 2);
    assert.match(
      lines[1] ?? '',
      /^"'=HYPERLINK\(""https:\/\/evil\.example""\)",closed,5,5,25,critical,untreated,,,,,,,A\.5\.15,/,
    );
    const owned = (await client.get(`${page}/risks.csv?owner_id=${ada.id}`)).body.trim().split('\r\n');
    assert.match(owned[1] ?? '', /^Phishing,open,4,3,12,high,mitigate,,,,,,Ada,,/);

    for (let i = 0; i < 55; i++) await make({ title: `Bulk ${i}`, likelihood: 1, impact: 1 });
    const first = await client.get(`${page}/risks`);
    assert.equal(titles(first.body).length, 50);
    const next = /<a href="([^"]+)" rel="next">/.exec(first.body)?.[1]?.replaceAll('&amp;', '&') ?? '';
    assert.equal(titles((await client.get(next)).body).length, 9);

    for (const bad of [
      'status=pending',
      'likelihood=6',
      'impact=x',
      'treatment=ignore',
      `q=${'x'.repeat(201)}`,
      'status=open&status=closed',
      `owner_id=${'p'.repeat(65)}`,
      'control_id=%00',
    ]) {
      const refused = await client.get(`${page}/risks?${bad}`);
      assert.equal(refused.status, 400, bad);
      assert.equal(errorCodeOf(refused.body), 'invalid_filter', bad);
    }
    const forged = await client.get(`${page}/risks?cursor=bm9wZQ`);
    assert.deepEqual([forged.status, errorCodeOf(forged.body)], [400, 'invalid_cursor']);
  });

  it('answers bad input with the form again, and another workspace’s risks with 404', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page, fixture } = owner;
    await client.get(`${page}/risks/new`);
    const noTitle = await client.post(`${page}/risks`, {
      ...FULL_FORM,
      title: '  ',
      likelihood: '9',
      residual_impact: '0x2',
      due_date: 'tomorrow',
      treatment: 'ignore',
    });
    assert.equal(noTitle.status, 400);
    for (const message of [
      'Give the risk a title',
      'Choose how likely the risk is',
      'Choose the impact after treatment',
      'Enter the due date as a date',
      'Choose a treatment from the list',
    ]) {
      assert.match(noTitle.body, new RegExp(message));
    }
    assert.match(
      noTitle.body,
      /<textarea id="description"[^>]*>Unencrypted disks on staff laptops\.<\/textarea>/,
    );
    const unknownPerson = await client.post(`${page}/risks`, { ...FULL_FORM, owner_id: 'per_nobody' });
    assert.equal(unknownPerson.status, 400);
    assert.match(unknownPerson.body, /Choose the owner from the list/);
    const unknownControl = await client.post(`${page}/risks`, { ...FULL_FORM, control_ids: ['ctl_nope'] });
    assert.equal(unknownControl.status, 400);
    assert.match(unknownControl.body, /<a href="#controls">Choose the controls from the list/);
    const noRating = await client.post(`${page}/risks`, { title: 'Only a title' });
    assert.equal(noRating.status, 400);
    assert.match(noRating.body, /Choose how likely the risk is/);
    const tooLong = await client.post(`${page}/risks`, { ...FULL_FORM, title: 'x'.repeat(2000) });
    assert.equal(tooLong.status, 400);
    const twice = await client.post(`${page}/risks`, { ...FULL_FORM, title: ['a', 'b'] });
    assert.equal(twice.status, 400);
    assert.equal((await owner.api('GET', '/risks')).body.data.length, 0, 'nothing was created');

    const risk = (await owner.api('POST', '/risks', { title: 'Ours', likelihood: 2, impact: 2 })).body;
    const riskUrl = `${page}/risks/${risk.id}`;
    await client.get(riskUrl);
    const badEdit = await client.post(riskUrl, { ...FULL_FORM, status: 'archived', impact: '' });
    assert.equal(badEdit.status, 400);
    assert.match(badEdit.body, /Choose open or closed/);
    assert.match(badEdit.body, /Choose how bad it would be/);
    assert.equal((await owner.api('GET', `/risks/${risk.id}`)).body.title, 'Ours');
    assert.equal((await client.get(`${page}/risks/${'x'.repeat(65)}`)).status, 404);

    const other = await fixture.provision({ email: 'other@example.com' });
    const stranger = await acceptAsNewAccount(fixture.runtime.app, other.invitationPath);
    assert.equal((await stranger.get(riskUrl)).status, 404);
    assert.equal((await stranger.get(`/w/${other.workspaceId}/risks/${risk.id}`)).status, 404);
    await stranger.get(`/w/${other.workspaceId}/risks`);
    assert.equal((await stranger.post(`/w/${other.workspaceId}/risks/${risk.id}`, FULL_FORM)).status, 404);
    assert.equal((await stranger.post(`/w/${other.workspaceId}/risks/${risk.id}/delete`, {})).status, 404);
    assert.equal((await owner.api('GET', `/risks/${risk.id}`)).body.title, 'Ours');
    const signedOut = await webClient(fixture.runtime.app).get(`${page}/risks`);
    assert.equal(signedOut.status, 303);
    assert.match(signedOut.location ?? '', /^\/sign-in\?next=/);
  });
});
