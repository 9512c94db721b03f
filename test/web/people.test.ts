// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { multipartShapes } from '../fuzz/corpus.ts';
import { testDialect } from '../helpers/database.ts';
import { acceptAsNewAccount, type SignedInOwner, signedInOwner, webClient } from '../helpers/web.ts';

function errorCodeOf(body: string): string | undefined {
  return /<meta name="error-code" content="([a-z_]+)">/.exec(body)?.[1];
}

/** The names a people list shows, in order. */
function names(body: string): string[] {
  return [...body.matchAll(/<th scope="row" data-label="Name"><a href="[^"]+">([^<]+)<\/a>/g)].map(
    (m) => m[1] ?? '',
  );
}

/** Posts an import form as a browser does, `multipart/form-data`, with the client's cookies and token. */
async function postMultipart(
  owner: SignedInOwner,
  url: string,
  fields: Record<string, string>,
  file?: { bytes: Uint8Array; name: string },
) {
  const form = new FormData();
  form.set('_csrf', owner.client.csrfToken());
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  form.set('file', new Blob(file ? [file.bytes] : [], { type: 'text/csv' }), file?.name ?? '');
  const encoded = new Response(form);
  const response = await owner.fixture.runtime.app.inject({
    method: 'POST',
    url,
    headers: {
      accept: 'text/html',
      'content-type': encoded.headers.get('content-type') ?? '',
      origin: new URL(owner.fixture.baseUrl).origin,
      cookie: [...owner.client.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
    },
    payload: Buffer.from(await encoded.arrayBuffer()),
  });
  return { status: response.statusCode, body: response.body };
}

function hiddenBase64(body: string): string {
  return /name="csv_base64" value="([^"]*)"/.exec(body)?.[1] ?? '';
}

describe(`the People pages on ${testDialect}`, () => {
  it('adds, edits and marks a person as left: the API sees it, and the history, audit log and webhooks tell who', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    const empty = await client.get(`${page}/people`);
    assert.equal(empty.status, 200);
    assert.match(empty.body, /No people yet/);
    assert.match(empty.body, /aria-current="page">People</);
    await client.get(`${page}/people/new`);

    const created = await client.post(`${page}/people`, {
      email: ' Ada@Example.com ',
      name: 'Ada Lovelace',
      title: 'CTO',
      department: '',
      employment_status: 'current',
    });
    assert.equal(created.status, 303, created.body);
    const personUrl = created.location?.split('?')[0] ?? '';
    const personId = personUrl.split('/').at(-1) ?? '';
    const shown = await client.get(created.location ?? '');
    assert.match(shown.body, /Person added\./);
    assert.match(shown.body, /<h1>Ada Lovelace<\/h1>/);
    assert.deepEqual(
      (await owner.api('GET', `/people/${personId}`)).body,
      (await owner.api('GET', '/people')).body.data[0],
    );
    const viaApi = (await owner.api('GET', `/people/${personId}`)).body;
    assert.deepEqual(
      [viaApi.email, viaApi.name, viaApi.title, viaApi.department, viaApi.employment_status],
      ['ada@example.com', 'Ada Lovelace', 'CTO', null, 'current'],
    );

    const taken = await client.post(`${page}/people`, {
      email: 'ADA@example.com',
      employment_status: 'future',
    });
    assert.equal(taken.status, 400);
    assert.match(taken.body, /Ada Lovelace already has this email\./);
    assert.equal((await owner.api('GET', `/people/${personId}`)).body.employment_status, 'current');

    const edited = await client.post(personUrl, {
      email: 'ada@example.com',
      name: 'Ada King',
      title: 'CTO',
      department: 'Engineering',
      employment_status: 'current',
    });
    assert.equal(edited.status, 303, edited.body);
    const left = await client.post(`${personUrl}/leave`, { left_on: '2026-02-27' });
    assert.equal(left.status, 303, left.body);
    const leftPage = await client.get(left.location ?? '');
    assert.match(leftPage.body, /Marked as left\./);
    assert.match(leftPage.body, /<dt>Left on<\/dt><dd>2026-02-27<\/dd>/);
    assert.match(leftPage.body, /Save leaving date/);
    assert.deepEqual(
      [
        (await owner.api('GET', `/people/${personId}`)).body.employment_status,
        (await owner.api('GET', `/people/${personId}`)).body.left_on,
      ],
      ['former', '2026-02-27'],
    );

    const history = (await client.get(personUrl)).body;
    for (const line of ['Person added', 'Person changed', 'Person marked as left'])
      assert.match(history, new RegExp(`<strong>${line}</strong> by owner@example\\.com`));
    assert.match(history, /name: <del>Ada Lovelace<\/del> → <ins>Ada King<\/ins>/);
    assert.match(history, /left on: <del>—<\/del> → <ins>2026-02-27<\/ins>/);

    const audit = (await owner.api('GET', `/audit-events?target_id=${personId}`)).body.data;
    assert.deepEqual(
      audit.map((event: { action: string; actor: { label: string } }) => [event.action, event.actor.label]),
      [
        ['person.left', 'owner@example.com'],
        ['person.updated', 'owner@example.com'],
        ['person.created', 'owner@example.com'],
      ],
    );
    const events = await owner.fixture.runtime.database.db
      .selectFrom('webhook_events')
      .select('type')
      .where('workspace_id', '=', owner.workspaceId)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      events.map((event) => event.type).filter((type) => type.startsWith('person.')),
      ['person.created', 'person.updated', 'person.left'],
    );
  });

  it('lists people by employment status, searches, pages and exports them as CSV', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    await owner.api('POST', '/people', { email: 'ada@example.com', name: 'Ada Lovelace' });
    await owner.api('POST', '/people', {
      email: 'grace@example.com',
      name: 'Grace Hopper',
      employment_status: 'future',
    });
    await owner.api('POST', '/people', {
      email: 'evil@example.com',
      name: '=HYPERLINK("https://evil.example")',
      employment_status: 'former',
      left_on: '2026-01-31',
    });

    const list = async (query: string) => names((await client.get(`${page}/people${query}`)).body);
    assert.deepEqual(await list(''), [
      'Ada Lovelace',
      'Grace Hopper',
      '=HYPERLINK(&quot;https://evil.example&quot;)',
    ]);
    assert.deepEqual(await list('?employment_status=future'), ['Grace Hopper']);
    assert.deepEqual(await list('?q=LOVELACE'), ['Ada Lovelace']);
    assert.deepEqual(await list('?q=grace%40'), ['Grace Hopper']);
    assert.match(
      (await client.get(`${page}/people?employment_status=former`)).body,
      /Former \(left\), left 2026-01-31/,
    );
    assert.match((await client.get(`${page}/people?q=nobody`)).body, /Nobody matches these filters\./);

    const csv = await client.get(`${page}/people.csv?employment_status=former`);
    assert.equal(csv.status, 200);
    assert.match(String(csv.headers['content-type']), /^text\/csv/);
    const lines = csv.body.trim().split('\r\n');
    assert.equal(lines[0], 'email,name,title,department,employment_status,left_on,id,created_at');
    assert.equal(lines.length, 2);
    assert.match(
      lines[1] ?? '',
      /^evil@example\.com,"'=HYPERLINK\(""https:\/\/evil\.example""\)",,,former,2026-01-31,per_/,
    );

    for (let i = 0; i < 50; i++) await owner.api('POST', '/people', { email: `bulk${i}@example.com` });
    const first = await client.get(`${page}/people`);
    assert.equal(names(first.body).length, 50);
    const next = /<a href="([^"]+)" rel="next">/.exec(first.body)?.[1]?.replaceAll('&amp;', '&') ?? '';
    assert.equal(names((await client.get(next)).body).length, 3);

    for (const bad of ['employment_status=retired', `q=${'x'.repeat(201)}`, 'q=a&q=b']) {
      const refused = await client.get(`${page}/people?${bad}`);
      assert.equal(refused.status, 400, bad);
      assert.equal(errorCodeOf(refused.body), 'invalid_filter', bad);
    }
    const forged = await client.get(`${page}/people?cursor=bm9wZQ`);
    assert.deepEqual([forged.status, errorCodeOf(forged.body)], [400, 'invalid_cursor']);
  });

  it('imports a CSV file: a preview of what is added, changed and refused, then exactly that file applied', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    const ada = (await owner.api('POST', '/people', { email: 'ada@example.com', name: 'Ada', title: 'CTO' }))
      .body;
    const upload = await client.get(`${page}/people/import`);
    assert.equal(upload.status, 200);
    assert.match(upload.body, /enctype="multipart\/form-data"/);

    const file = [
      'Email,Name,Title,Employment_Status',
      'ada@example.com,Ada Lovelace,CTO,former',
      'grace@example.com,"Hopper, Grace",Rear Admiral,current',
      'not-an-address,Nobody,,',
      'linus@example.com,<script>alert(1)</script>,,retired',
      '',
    ].join('\r\n');
    const preview = await postMultipart(
      owner,
      `${page}/people/import`,
      { csv_text: '' },
      {
        bytes: new TextEncoder().encode(`\uFEFF${file}`),
        name: 'people.csv',
      },
    );
    assert.equal(preview.status, 200, preview.body);
    assert.match(preview.body, /Nothing has changed yet/);
    assert.match(preview.body, /To add \(1\)[\s\S]*grace@<wbr>example<wbr>\.com/);
    assert.match(preview.body, /To change \(1\)[\s\S]*Name: <del>Ada<\/del> → <ins>Ada Lovelace<\/ins>/);
    assert.match(
      preview.body,
      /Employment status: <del>Current employee<\/del> → <ins>Former \(left\)<\/ins>/,
    );
    assert.match(preview.body, /Left on: <del>—<\/del> → <ins>2026-03-01<\/ins>/);
    assert.match(preview.body, /Refused \(2\)[\s\S]*The email is not a valid address\./);
    assert.match(preview.body, /employment_status is not one of current, future, former, contractor\./);
    assert.doesNotMatch(preview.body, /<script>alert/);
    assert.equal((await owner.api('GET', '/people')).body.data.length, 1, 'a preview writes nothing');

    const applied = await postMultipart(owner, `${page}/people/import/apply`, {
      csv_base64: hiddenBase64(preview.body),
    });
    assert.equal(applied.status, 200, applied.body);
    assert.match(applied.body, /Import applied: 1 added, 1 changed, 0 already up to date, 2 refused\./);
    const people = (await owner.api('GET', '/people')).body.data;
    assert.deepEqual(
      people.map((person: { email: string; name: string; employment_status: string }) => [
        person.email,
        person.name,
        person.employment_status,
      ]),
      [
        ['ada@example.com', 'Ada Lovelace', 'former'],
        ['grace@example.com', 'Hopper, Grace', 'current'],
      ],
    );
    const audit = (await owner.api('GET', `/audit-events?target_id=${ada.id}`)).body.data;
    assert.deepEqual([audit[0].action, audit[0].actor.label], ['person.left', 'owner@example.com']);

    const again = await postMultipart(owner, `${page}/people/import/apply`, {
      csv_base64: hiddenBase64(preview.body),
    });
    assert.match(again.body, /Import applied: 0 added, 0 changed, 2 already up to date, 2 refused\./);

    // Pasted rows work without a file, in a plain form too.
    await client.get(`${page}/people/import`);
    const pasted = await client.post(`${page}/people/import`, { csv_text: 'email\nlinus@example.com\n' });
    assert.equal(pasted.status, 200, pasted.body);
    assert.match(pasted.body, /To add \(1\)/);
    const pastedApplied = await client.post(`${page}/people/import/apply`, {
      csv_base64: hiddenBase64(pasted.body),
    });
    assert.match(pastedApplied.body, /Import applied: 1 added/);
    const nothingNew = await client.post(`${page}/people/import`, { csv_text: 'email\nlinus@example.com\n' });
    assert.match(nothingNew.body, /Nothing to import/);
    assert.doesNotMatch(nothingNew.body, /Apply the import/);
  });

  it('refuses an import it cannot read with the form again, and writes nothing', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    await client.get(`${page}/people/import`);
    const cases: [Record<string, string>, { bytes: Uint8Array; name: string } | undefined, RegExp][] = [
      [{ csv_text: '' }, undefined, /Choose a CSV file, or paste its rows\./],
      [{ csv_text: 'mail,name\nada@example.com,Ada' }, undefined, /The header names &quot;mail&quot;/],
      [
        {},
        { bytes: new Uint8Array([0x65, 0x6d, 0x61, 0x69, 0x6c, 0x0a, 0xff, 0xfe]), name: 'latin1.csv' },
        /not UTF-8 text/,
      ],
      [{}, { bytes: new Uint8Array(1_048_577).fill(0x61), name: 'big.csv' }, /larger than 1 MiB/],
      [{ csv_text: 'email,name\n"ada@example.com,Ada' }, undefined, /Line 2: /],
    ];
    for (const [fields, file, message] of cases) {
      const refused = await postMultipart(owner, `${page}/people/import`, fields, file);
      assert.equal(refused.status, 400, String(message));
      assert.match(refused.body, message);
      assert.match(refused.body, /class="error-summary"/);
    }
    const noCopy = await postMultipart(owner, `${page}/people/import/apply`, { csv_base64: '' });
    assert.equal(noCopy.status, 400);
    const notBase64 = await postMultipart(owner, `${page}/people/import/apply`, { csv_base64: '!!!' });
    assert.equal(notBase64.status, 400);
    const prototypeField = await postMultipart(owner, `${page}/people/import`, { constructor: 'x' });
    assert.equal(prototypeField.status, 400);
    assert.equal((await owner.api('GET', '/people')).body.data.length, 0);
    for (const shape of multipartShapes()) {
      for (const url of [`${page}/people/import`, `${page}/people/import/apply`]) {
        const answer = await owner.fixture.runtime.app.inject({
          method: 'POST',
          url,
          headers: {
            accept: 'text/html',
            'content-type': shape.contentType,
            origin: new URL(owner.fixture.baseUrl).origin,
            cookie: [...client.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
          },
          payload: shape.body,
        });
        assert.ok(answer.statusCode >= 400 && answer.statusCode < 500, `${shape.name}: ${answer.statusCode}`);
      }
    }
    const crossSite = await client.post(
      `${page}/people/import`,
      { csv_text: 'email\na@example.com' },
      { origin: 'https://evil.example' },
    );
    assert.equal(crossSite.status, 403);
  });

  it('answers bad input with the form again, and another workspace’s people with 404', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page, fixture } = owner;
    await client.get(`${page}/people/new`);
    const bad = await client.post(`${page}/people`, {
      email: 'not an address',
      name: 'x'.repeat(201),
      employment_status: 'retired',
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body, /Enter an email address/);
    assert.match(bad.body, /Keep the name to at most 200 characters/);
    assert.match(bad.body, /Choose the employment status from the list/);
    assert.match(bad.body, /value="not an address"/, 'the form comes back as sent');
    const tooLong = await client.post(`${page}/people`, { email: 'x'.repeat(2000) });
    assert.equal(tooLong.status, 400);
    assert.equal((await owner.api('GET', '/people')).body.data.length, 0, 'nothing was created');

    const person = (await owner.api('POST', '/people', { email: 'ada@example.com' })).body;
    const grace = (await owner.api('POST', '/people', { email: 'grace@example.com' })).body;
    await client.get(`${page}/people/${person.id}`);
    const clash = await client.post(`${page}/people/${person.id}`, {
      email: 'grace@example.com',
      employment_status: 'current',
    });
    assert.equal(clash.status, 400);
    assert.match(clash.body, /Another person in the directory has this email\./);
    const noDate = await client.post(`${page}/people/${person.id}/leave`, { left_on: 'yesterday' });
    assert.equal(noDate.status, 400);
    assert.match(noDate.body, /Enter the leaving date as a date/);
    assert.equal((await owner.api('GET', `/people/${person.id}`)).body.employment_status, 'current');
    assert.equal((await client.get(`${page}/people/per_nobody`)).status, 404);
    assert.equal((await client.get(`${page}/people/${'x'.repeat(65)}`)).status, 404);

    const other = await fixture.provision({ email: 'other@example.com' });
    const stranger = await acceptAsNewAccount(fixture.runtime.app, other.invitationPath);
    assert.equal((await stranger.get(`${page}/people/${person.id}`)).status, 404);
    assert.equal((await stranger.get(`/w/${other.workspaceId}/people/${person.id}`)).status, 404);
    await stranger.get(`/w/${other.workspaceId}/people`);
    assert.equal(
      (await stranger.post(`/w/${other.workspaceId}/people/${grace.id}/leave`, { left_on: '2026-01-01' }))
        .status,
      404,
    );
    assert.equal((await owner.api('GET', `/people/${grace.id}`)).body.employment_status, 'current');
    const signedOut = await webClient(fixture.runtime.app).get(`${page}/people`);
    assert.equal(signedOut.status, 303);
    assert.match(signedOut.location ?? '', /^\/sign-in\?next=/);
  });
});
