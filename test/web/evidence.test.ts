// db-scope: both

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { evidenceBytesStored, getControl, listEvidence } from '../../src/compliance/index.ts';
import { multipartShapes } from '../fuzz/corpus.ts';
import { testDialect } from '../helpers/database.ts';
import { failingWrites, writeError } from '../helpers/evidence-stores.ts';
import { type SignedInOwner, signedInOwner } from '../helpers/web.ts';

const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n',
);
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const EXE = Buffer.concat([Buffer.from('MZ'), Buffer.alloc(200, 1)]);

function errorCodeOf(body: string): string | undefined {
  return /<meta name="error-code" content="([a-z_]+)">/.exec(body)?.[1];
}

/** The evidence titles a list page shows, in order. */
function titles(body: string): string[] {
  return [...body.matchAll(/<th scope="row" data-label="Evidence"><a href="[^"]+">([^<]+)<\/a>/g)].map(
    (m) => m[1] ?? '',
  );
}

type Part = { name: string; value: string } | { name: string; file: Buffer; fileName: string };

/**
 * Posts the upload form as a browser does, `multipart/form-data`, the token first (as the page's
 * hidden field is), with the client's cookies.
 */
async function upload(owner: SignedInOwner, parts: Part[], options: { token?: boolean } = {}) {
  const form = new FormData();
  if (options.token !== false) form.append('_csrf', owner.client.csrfToken());
  for (const part of parts) {
    if ('file' in part) form.append(part.name, new Blob([part.file]), part.fileName);
    else form.append(part.name, part.value);
  }
  const encoded = new Response(form);
  const response = await owner.fixture.runtime.app.inject({
    method: 'POST',
    url: `${owner.page}/evidence/files`,
    headers: {
      accept: 'text/html',
      'content-type': encoded.headers.get('content-type') ?? '',
      origin: new URL(owner.fixture.baseUrl).origin,
      cookie: [...owner.client.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
    },
    payload: Buffer.from(await encoded.arrayBuffer()),
  });
  return {
    status: response.statusCode,
    body: response.body,
    location: response.headers.location as string,
    retryAfter: response.headers['retry-after'] as string | undefined,
  };
}

async function controlOf(owner: SignedInOwner, reference: string) {
  return (await owner.api('GET', `/controls/${reference}`)).body as { id: string; reference: string };
}

describe(`the Evidence pages on ${testDialect}`, () => {
  it('uploads several files linked to controls, as the API stores them, with a trail naming the member', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    const control = await controlOf(owner, 'A.5.15');
    const form = await client.get(`${page}/evidence/new`);
    assert.equal(form.status, 200);
    assert.match(form.body, /enctype="multipart\/form-data"/);
    assert.match(form.body, /<script src="\/assets\/upload-progress\.js\?v=[0-9a-f]+" defer><\/script>/);
    assert.match(form.body, /Up to 5 files at once, each up to 25 MiB/);

    const sent = await upload(owner, [
      { name: 'file', file: PDF, fileName: 'access-review.pdf' },
      { name: 'file', file: PNG, fileName: 'mfa-screenshot.png' },
      { name: 'control_ids', value: control.id },
    ]);
    assert.equal(sent.status, 303, sent.body);
    assert.equal(sent.location, `${page}/evidence?notice=uploaded`);
    const listed = (await owner.api('GET', `/evidence?control_id=${control.id}`)).body.data;
    assert.deepEqual(
      listed
        .map((e: { title: string; file: { content_type: string } }) => [e.title, e.file.content_type])
        .sort(),
      [
        ['access-review.pdf', 'application/pdf'],
        ['mfa-screenshot.png', 'image/png'],
      ],
    );
    const list = await client.get(`${page}/evidence?notice=uploaded`);
    assert.match(list.body, /Files added\./);
    assert.match(
      list.body,
      new RegExp(`<a href="${page}/controls/A\\.5\\.15" title="Access control">A\\.5\\.15</a>`),
    );

    const pdf = listed.find((e: { title: string }) => e.title === 'access-review.pdf');
    const audit = (await owner.api('GET', `/audit-events?target_id=${pdf.id}`)).body.data;
    assert.deepEqual(
      audit.map((event: { action: string; actor: { label: string } }) => [event.action, event.actor.label]),
      [['evidence.created', 'owner@example.com']],
    );

    // One file: its page.
    const one = await upload(owner, [{ name: 'file', file: PDF, fileName: 'policy.pdf' }]);
    assert.equal(one.status, 303, one.body);
    assert.match(one.location, new RegExp(`^${page}/evidence/evd_[^?]+\\?notice=uploaded$`));
  });

  it('refuses what the API refuses, keeping nothing: a type, a size, no file, no token, too many files', async (t) => {
    const owner = await signedInOwner(t, { env: { EVIDENCE_MAX_BYTES: '2048' } });
    const { client, page, fixture } = owner;
    await client.get(`${page}/evidence/new`);
    const db = fixture.runtime.database.db;

    const exe = await upload(owner, [
      { name: 'file', file: PDF, fileName: 'fine.pdf' },
      { name: 'file', file: EXE, fileName: 'setup.exe' },
    ]);
    assert.equal(exe.status, 415);
    assert.match(
      exe.body,
      /setup\.exe is not a type of file accepted as evidence \(application\/x-msdownload\); no file was added\./,
    );

    const big = await upload(owner, [{ name: 'file', file: Buffer.alloc(4096, 0x61), fileName: 'big.txt' }]);
    assert.equal(big.status, 413);
    assert.match(big.body, /larger than 2 KiB; no file was added/);

    const none = await upload(owner, [{ name: 'file', file: Buffer.alloc(0), fileName: '' }]);
    assert.equal(none.status, 400, none.body);
    assert.match(none.body, /Choose one or more files to upload\./);

    const unknownControl = await upload(owner, [
      { name: 'file', file: PDF, fileName: 'a.pdf' },
      { name: 'control_ids', value: 'ctl_nope' },
    ]);
    assert.equal(unknownControl.status, 400);
    assert.match(unknownControl.body, /Choose the controls from the list\./);

    const six = await upload(
      owner,
      Array.from({ length: 6 }, (_, index) => ({ name: 'file', file: PDF, fileName: `${index}.pdf` })),
    );
    assert.equal(six.status, 413);
    assert.match(six.body, /Send at most 5 files and 19 controls at once/);

    const forged = await upload(owner, [{ name: 'file', file: PDF, fileName: 'forged.pdf' }], {
      token: false,
    });
    assert.equal(forged.status, 403);

    assert.equal(await evidenceBytesStored(db, owner.workspaceId), 0);
    assert.equal((await owner.api('GET', '/evidence?retired=all')).body.data.length, 0);

    // Hostile bodies, as they come and behind a valid token: a page, never a 500.
    const token = `--fuzzBoundary7MA4YWxk\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${client.csrfToken()}\r\n`;
    for (const shape of multipartShapes()) {
      for (const body of [shape.body, Buffer.concat([Buffer.from(token), shape.body])]) {
        const answer = await fixture.runtime.app.inject({
          method: 'POST',
          url: `${page}/evidence/files`,
          headers: {
            accept: 'text/html',
            'content-type': shape.contentType,
            origin: new URL(fixture.baseUrl).origin,
            cookie: [...client.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
          },
          payload: body,
        });
        assert.ok(answer.statusCode < 500, `${shape.name}: ${answer.statusCode}`);
      }
    }
  });

  it('answers the plan storage limit as a form error with the 403 of the API, naming what was kept', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page, fixture, workspaceId } = owner;
    await fixture.runtime.database.db
      .updateTable('workspaces')
      .set({ plan: 'free' })
      .where('id', '=', workspaceId)
      .execute();
    // The free plan stores 100 MiB: fill it but for the first file's bytes.
    await fixture.runtime.database.db
      .insertInto('evidence')
      .values({
        id: 'evd_filler',
        workspace_id: workspaceId,
        kind: 'link',
        title: 'filler',
        url: 'https://example.com',
        file_name: null,
        file_size: 100 * 1024 * 1024 - PDF.length,
        file_sha256: null,
        content_type: null,
        storage_key: null,
        retired_at: null,
        created_at: 1,
        updated_at: 1,
      })
      .execute();
    await client.get(`${page}/evidence/new`);
    const sent = await upload(owner, [
      { name: 'file', file: PDF, fileName: 'kept.pdf' },
      { name: 'file', file: PNG, fileName: 'over.png' },
    ]);
    assert.equal(sent.status, 403);
    assert.equal(errorCodeOf(sent.body), 'forbidden');
    assert.match(sent.body, /kept\.pdf was added; over\.png and the files after it were not\./);
    assert.match(sent.body, /\/w\/[^/]+\/billing/);
  });

  it('answers a full or failing store with the error page (507, or 503 and Retry-After), logged, keeping nothing', async (t) => {
    for (const [fault, status, code] of [
      ['ENOSPC', 507, 'insufficient_storage'],
      ['EIO', 503, 'storage_unavailable'],
    ] as const) {
      const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-evidence-'));
      t.after(() => rmSync(dataDir, { recursive: true, force: true }));
      const owner = await signedInOwner(t, {
        env: { DATA_DIR: dataDir, EVIDENCE_STORAGE: 'local' },
        wrapEvidenceStore: failingWrites(() => writeError(fault), 0),
      });
      await owner.client.get(`${owner.page}/evidence/new`);
      const sent = await upload(owner, [{ name: 'file', file: PDF, fileName: 'policy.pdf' }]);
      assert.equal(sent.status, status, fault);
      assert.equal(errorCodeOf(sent.body), code, fault);
      assert.equal(sent.retryAfter, status === 503 ? '30' : undefined, fault);
      assert.equal((await owner.api('GET', '/evidence')).body.data.length, 0, 'no evidence row');
      assert.deepEqual(
        readdirSync(path.join(dataDir, 'evidence'), { recursive: true }).filter((name) =>
          String(name).includes('.'),
        ),
        [],
        'no file',
      );
    }
  });

  it('adds a link, edits its title and controls, retires, restores and deletes it; history names the controls', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    const a515 = await controlOf(owner, 'A.5.15');
    const a82 = await controlOf(owner, 'A.8.2');
    await client.get(`${page}/evidence/new`);

    const bad = await client.post(`${page}/evidence/links`, {
      title: '',
      url: 'ftp://x',
      control_ids: [a515.id],
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body, /Give the evidence a title/);
    assert.match(bad.body, /full http or https address/);
    assert.match(bad.body, new RegExp(`value="${a515.id}" checked`));

    const created = await client.post(`${page}/evidence/links`, {
      title: 'Access review',
      url: 'https://wiki.example.com/access',
      control_ids: [a515.id],
    });
    assert.equal(created.status, 303, created.body);
    const url = created.location?.split('?')[0] ?? '';
    const id = url.split('/').at(-1) ?? '';
    const shown = await client.get(created.location ?? '');
    assert.match(shown.body, /Evidence added\./);
    assert.match(
      shown.body,
      /href="https:\/\/wiki\.example\.com\/access" rel="noopener noreferrer nofollow"/,
    );
    assert.doesNotMatch(shown.body, /Download file/);

    const edited = await client.post(url, { title: 'Access review Q1', control_ids: [a515.id, a82.id] });
    assert.equal(edited.status, 303, edited.body);
    const viaApi = (await owner.api('GET', `/evidence/${id}`)).body;
    assert.equal(viaApi.title, 'Access review Q1');
    assert.deepEqual(viaApi.control_ids, [a515.id, a82.id].sort());
    const history = (await client.get(url)).body;
    assert.match(history, /controls: <del>A\.5\.15<\/del> → <ins>A\.(5\.15, A\.8\.2|8\.2, A\.5\.15)<\/ins>/);
    assert.match(history, /<strong>Evidence changed<\/strong> by owner@example\.com/);

    assert.equal((await client.post(`${url}/retire`, {})).status, 303);
    assert.ok((await owner.api('GET', `/evidence/${id}`)).body.retired_at);
    assert.deepEqual(titles((await client.get(`${page}/evidence`)).body), []);
    assert.deepEqual(titles((await client.get(`${page}/evidence?show=retired`)).body), ['Access review Q1']);
    assert.equal((await client.post(`${url}/restore`, {})).status, 303);
    assert.deepEqual(titles((await client.get(`${page}/evidence`)).body), ['Access review Q1']);

    await client.get(url);
    const unconfirmed = await client.post(`${url}/delete`, {});
    assert.equal(unconfirmed.status, 400);
    assert.match(unconfirmed.body, /Tick the box to confirm the deletion\./);
    const deleted = await client.post(`${url}/delete`, { confirm: 'yes' });
    assert.equal(deleted.status, 303);
    assert.equal((await owner.api('GET', `/evidence/${id}`)).status, 404);
    const actions = (await owner.api('GET', `/audit-events?target_id=${id}`)).body.data.map(
      (event: { action: string }) => event.action,
    );
    assert.deepEqual(actions, [
      'evidence.deleted',
      'evidence.restored',
      'evidence.retired',
      'evidence.updated',
      'evidence.created',
    ]);
  });

  it('downloads a file as an attachment to members only, and answers 404 for another workspace', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    await client.get(`${page}/evidence/new`);
    const sent = await upload(owner, [{ name: 'file', file: PDF, fileName: 'réview q1.pdf' }]);
    const url = sent.location.split('?')[0] ?? '';
    const shown = await client.get(url);
    assert.match(shown.body, new RegExp(`<a class="button" href="${url}/file" download>Download file</a>`));
    const download = await owner.fixture.runtime.app.inject({
      method: 'GET',
      url: `${url}/file`,
      headers: { cookie: [...client.cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
    });
    assert.equal(download.statusCode, 200);
    assert.deepEqual(download.rawPayload, PDF);
    assert.equal(download.headers['content-type'], 'application/pdf');
    assert.match(
      String(download.headers['content-disposition']),
      /^attachment; filename="r_view q1.pdf"; filename\*=UTF-8''r%C3%A9view%20q1.pdf$/,
    );
    assert.match(String(download.headers['content-security-policy']), /sandbox/);
    assert.equal(download.headers['cache-control'], 'private, no-store');

    const signedOut = await owner.fixture.runtime.app.inject({
      method: 'GET',
      url: `${url}/file`,
      headers: { accept: 'text/html' },
    });
    assert.equal(signedOut.statusCode, 303);

    const other = await owner.fixture.provision({ email: 'other@example.com' });
    const otherPage = `/w/${other.workspaceId}`;
    const id = url.split('/').at(-1);
    assert.equal((await client.get(`${otherPage}/evidence/${id}`)).status, 404);
    // Another workspace's id in our own workspace's addresses.
    const foreign = await getControl(
      { db: owner.fixture.runtime.database.db, clock: owner.fixture.runtime.clock },
      other.workspaceId,
      'A.5.1',
    );
    assert.ok(foreign);
    assert.equal((await client.get(`${page}/controls/${foreign.id}`)).status, 404);
    assert.equal((await client.get(`${page}/evidence/evd_${'x'.repeat(20)}`)).status, 404);
    assert.equal((await client.get(`${page}/evidence/evd_${'x'.repeat(20)}/file`)).status, 404);
    assert.equal((await client.post(`${page}/evidence/evd_${'x'.repeat(20)}/retire`, {})).status, 404);
  });

  it('filters by control, kind, date, search and retirement, and exports the filtered list as CSV', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page, fixture, workspaceId } = owner;
    const a515 = await controlOf(owner, 'A.5.15');
    const old = (
      await owner.api('POST', '/evidence', { title: 'Old wiki', url: 'https://wiki.example.com/old' })
    ).body;
    const today = fixture.runtime.clock.now();
    await fixture.runtime.database.db
      .updateTable('evidence')
      .set({ created_at: today.getTime() - 3 * 24 * 60 * 60 * 1000 })
      .where('id', '=', old.id)
      .execute();
    const since = today.toISOString().slice(0, 10);
    await owner.api('POST', '/evidence', {
      title: 'Access =review',
      url: 'https://wiki.example.com/access',
      control_ids: [a515.id],
    });
    await client.get(`${page}/evidence/new`);
    await upload(owner, [{ name: 'file', file: PDF, fileName: 'backup.pdf' }]);

    const all = await client.get(`${page}/evidence`);
    assert.deepEqual(titles(all.body), ['backup.pdf', 'Access =review', 'Old wiki'], all.body);
    assert.deepEqual(titles((await client.get(`${page}/evidence?control_id=${a515.id}`)).body), [
      'Access =review',
    ]);
    assert.deepEqual(titles((await client.get(`${page}/evidence?kind=file`)).body), ['backup.pdf']);
    assert.deepEqual(titles((await client.get(`${page}/evidence?since=${since}`)).body), [
      'backup.pdf',
      'Access =review',
    ]);
    assert.deepEqual(titles((await client.get(`${page}/evidence?q=WIKI`)).body), [
      'Access =review',
      'Old wiki',
    ]);
    assert.deepEqual(titles((await client.get(`${page}/evidence?q=backup&kind=link`)).body), []);
    assert.match((await client.get(`${page}/evidence?q=zzz`)).body, /No evidence matches these filters\./);

    for (const bad of ['kind=exe', 'since=2026-13-01', 'show=everything', 'cursor=nope']) {
      const refused = await client.get(`${page}/evidence?${bad}`);
      assert.equal(refused.status, 400, bad);
    }

    const csv = await client.get(`${page}/evidence.csv?control_id=${a515.id}`);
    assert.equal(csv.status, 200);
    assert.match(String(csv.headers['content-type']), /^text\/csv/);
    const lines = csv.body.trim().split(/\r?\n/);
    assert.equal(
      lines[0],
      'title,kind,url,file_name,file_size,content_type,sha256,controls,created_at,retired_at,id',
    );
    assert.equal(lines.length, 2);
    assert.match(
      lines[1] ?? '',
      /^Access =review,link,https:\/\/wiki\.example\.com\/access,,,,,A\.5\.15,2026-/,
    );

    // The domain's search and kind filters, with the control filter's join.
    const deps = { db: fixture.runtime.database.db, downloadUrl: (id: string) => id };
    const found = await listEvidence(
      deps,
      workspaceId,
      { control_id: a515.id, q: 'ACCESS', kind: 'link' },
      { limit: 10 },
    );
    assert.deepEqual(
      found.items.map((e) => e.title),
      ['Access =review'],
    );
    assert.equal(await evidenceBytesStored(fixture.runtime.database.db, workspaceId), PDF.length);
  });
});
