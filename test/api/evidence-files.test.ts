// db-scope: both

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import pino from 'pino';
import { multipartShapes } from '../fuzz/corpus.ts';
import { type ApiFixture, startApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';
import { failingWrites, writeError } from '../helpers/evidence-stores.ts';

/** A one-page PDF: its second line is the binary comment real PDF writers put there. */
const PDF = Buffer.concat([
  Buffer.from('%PDF-1.7\n%'),
  Buffer.from([0xe2, 0xe3, 0xcf, 0xd3]),
  Buffer.from(
    '\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n2 0 obj <</Type /Pages /Kids [] /Count 0>> endobj\n',
  ),
  Buffer.from('trailer <</Root 1 0 R>>\n%%EOF\n'),
]);
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
const CSV = Buffer.from('control,status\nA.5.1,implemented\nA.5.2,in progress – owner on leave\n');
/** The start of an x86-64 Linux executable. */
const ELF = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(120)]);

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

async function startWithDataDir(
  t: TestContext,
  env: Record<string, string> = {},
  options: Omit<Parameters<typeof startApiFixture>[1], 'env'> = {},
) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-evidence-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const api = await startApiFixture(t, { ...options, env: { DATA_DIR: dataDir, ...env } });
  return { api, dataDir, storedFiles: () => filesUnder(path.join(dataDir, 'evidence')) };
}

/** A logger keeping every line it writes, parsed. */
function capturingLogger(level: string) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).trim().split('\n')) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level }, sink), lines };
}

function filesUnder(directory: string): string[] {
  try {
    return readdirSync(directory, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => path.join(entry.parentPath, entry.name));
  } catch {
    return [];
  }
}

function form(file: { bytes: Buffer; name: string } | undefined, fields: [string, string][] = []): FormData {
  const data = new FormData();
  for (const [name, value] of fields) data.append(name, value);
  if (file) data.append('file', new Blob([file.bytes], { type: 'application/octet-stream' }), file.name);
  return data;
}

async function download(api: ApiFixture, id: string, key = api.org.key) {
  const response = await fetch(`${api.url}/api/v1/evidence/${id}/file`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return { response, bytes: Buffer.from(await response.arrayBuffer()) };
}

async function evidenceRows(api: ApiFixture) {
  return api.runtime.database.db.selectFrom('evidence').selectAll().execute();
}

describe(`evidence files on ${testDialect}`, () => {
  it('are uploaded as multipart forms, typed from their bytes and downloaded byte for byte', async (t) => {
    const { api, dataDir, storedFiles } = await startWithDataDir(t);
    const uploads = [
      { bytes: PDF, name: 'Access review 2026.pdf', type: 'application/pdf' },
      { bytes: PNG, name: 'mfa-settings.png', type: 'image/png' },
      { bytes: CSV, name: 'Statement of applicability – Q1.csv', type: 'text/csv' },
      { bytes: Buffer.from('{"backups": "daily"}'), name: 'backup-policy.json', type: 'application/json' },
    ];
    for (const upload of uploads) {
      const created = await api.call('POST', '/evidence', { form: form(upload) });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const { id } = created.body;
      assert.deepEqual(created.body, {
        id,
        kind: 'file',
        title: upload.name,
        url: null,
        file: {
          name: upload.name,
          size: upload.bytes.length,
          sha256: sha256(upload.bytes),
          content_type: upload.type,
          download_url: `http://svc.test/api/v1/evidence/${id}/file`,
        },
        control_ids: [],
        retired_at: null,
        created_at: '2026-03-01T12:00:00.000Z',
        updated_at: '2026-03-01T12:00:00.000Z',
      });

      const { response, bytes } = await download(api, id);
      assert.equal(response.status, 200);
      assert.ok(bytes.equals(upload.bytes), `${upload.name}: the same bytes`);
      const charset = upload.type.startsWith('text/') ? '; charset=utf-8' : '';
      assert.equal(response.headers.get('content-type'), `${upload.type}${charset}`);
      assert.equal(response.headers.get('content-length'), String(upload.bytes.length));
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
      assert.match(response.headers.get('content-security-policy') ?? '', /default-src 'none'; sandbox/);
      assert.equal(
        response.headers.get('content-disposition'),
        `attachment; filename="${upload.name.replace(/[^\x20-\x7e]/g, '_')}"; ` +
          `filename*=UTF-8''${encodeURIComponent(upload.name)}`,
      );
    }
    const stored = storedFiles();
    assert.equal(stored.length, uploads.length);
    for (const file of stored) {
      assert.equal(path.dirname(file), path.join(dataDir, 'evidence', api.org.workspaceId));
      assert.match(path.basename(file), /^[0-9a-f]{32}$/, 'a name the server chose');
    }
  });

  it('take a title and controls from the form, repeated or comma-separated', async (t) => {
    const { api, storedFiles } = await startWithDataDir(t);
    const ids = [];
    for (const reference of ['A.5.1', 'A.5.2', 'A.5.3']) {
      ids.push((await api.call('GET', `/controls?q=${reference}`)).body.data[0].id);
    }
    const [a, b, c] = ids as [string, string, string];
    const created = await api.call('POST', '/evidence', {
      form: form({ bytes: PDF, name: '../../etc/passwd\u202egpj.pdf' }, [
        ['title', 'Signed policies'],
        ['control_ids', `${c}, ${a}`],
        ['control_ids', b],
      ]),
    });
    assert.equal(created.status, 201);
    assert.deepEqual(
      [created.body.title, created.body.control_ids, created.body.file.name],
      ['Signed policies', [a, b, c], 'passwdgpj.pdf'],
    );
    const listed = await api.call('GET', `/evidence?control_id=${b}`);
    assert.deepEqual(
      listed.body.data.map((e: { id: string }) => e.id),
      [created.body.id],
    );

    const other = await api.createOrganization('Other');
    const theirs = (await api.call('GET', '/controls?q=A.5.1', { key: other.key })).body.data[0].id;
    const refused = await api.call('POST', '/evidence', {
      form: form({ bytes: PDF, name: 'x.pdf' }, [['control_ids', `${a},${theirs}`]]),
    });
    assert.deepEqual(
      [refused.status, refused.body.code, refused.body.errors[0].path],
      [404, 'reference_not_found', 'body/control_ids/1'],
    );
    assert.equal(storedFiles().length, 1, 'the refused upload left no file');
    assert.equal((await evidenceRows(api)).length, 1);
  });

  it('refuse what is not a single known file with valid fields, leaving nothing behind', async (t) => {
    const { api, storedFiles } = await startWithDataDir(t, { EVIDENCE_MAX_BYTES: '1024' });
    const cases: [FormData, number, string, string?][] = [
      [form({ bytes: Buffer.alloc(1025, 'a'), name: 'big.txt' }), 413, 'file_too_large'],
      [form({ bytes: ELF, name: 'report.pdf' }), 415, 'unsupported_file_type'],
      [
        form({ bytes: Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x80]), name: 'data.csv' }),
        415,
        'unsupported_file_type',
      ],
      [form({ bytes: Buffer.alloc(0), name: 'empty.pdf' }), 400, 'invalid_request', 'body/file'],
      [form(undefined, [['title', 'no file']]), 400, 'invalid_request', 'body/file'],
      [
        form({ bytes: PDF, name: 'a.pdf' }, [['title', 'x'.repeat(201)]]),
        400,
        'invalid_request',
        'body/title',
      ],
      [form({ bytes: PDF, name: 'a.pdf' }, [['kind', 'link']]), 400, 'invalid_request', 'body/kind'],
      [
        form({ bytes: PDF, name: 'a.pdf' }, [
          ['title', 'one'],
          ['title', 'two'],
        ]),
        400,
        'invalid_request',
        'body/title',
      ],
    ];
    const twoFiles = form({ bytes: PDF, name: 'a.pdf' });
    twoFiles.append('file', new Blob([PDF]), 'b.pdf');
    cases.push([twoFiles, 413, 'too_many_parts']);
    const misnamed = new FormData();
    misnamed.append('document', new Blob([PDF]), 'a.pdf');
    cases.push([misnamed, 400, 'invalid_request', 'body/document']);

    for (const [body, status, code, field] of cases) {
      const refused = await api.call('POST', '/evidence', { form: body });
      assert.deepEqual([refused.status, refused.body.code], [status, code], JSON.stringify(refused.body));
      if (field)
        assert.ok(
          refused.body.errors.some((e: { path: string }) => e.path === field),
          field,
        );
    }
    assert.deepEqual(storedFiles(), []);
    assert.deepEqual(await evidenceRows(api), []);
    const fits = await api.call('POST', '/evidence', {
      form: form({ bytes: Buffer.alloc(1024, 'a'), name: 'a.txt' }),
    });
    assert.deepEqual([fits.status, fits.body.file.content_type], [201, 'text/plain']);
  });

  it('are the only form the API takes: a form sent to another route is 415, creating nothing', async (t) => {
    const { api } = await startWithDataDir(t);
    const tasksBefore = await api.call('GET', '/tasks');
    const refused = await api.call('POST', '/tasks', { form: form(undefined, [['title', 'From a form']]) });
    assert.deepEqual([refused.status, refused.body.code], [415, 'unsupported_media_type']);
    assert.deepEqual((await api.call('GET', '/tasks')).body.data, tasksBefore.body.data);
  });

  it('refuse every malformed multipart body with a 4xx problem, leaving no record and no file', async (t) => {
    const { api, dataDir, storedFiles } = await startWithDataDir(t, { EVIDENCE_MAX_BYTES: '65536' });
    const answers: string[] = [];
    for (const shape of multipartShapes()) {
      const response = await fetch(`${api.url}/api/v1/evidence`, {
        method: 'POST',
        headers: { authorization: `Bearer ${api.org.key}`, 'content-type': shape.contentType },
        body: shape.body,
      });
      const body = (await response.json()) as { code: string; id: string };
      answers.push(`${shape.name}: ${response.status} ${body.code}`);
      if (response.status === 201) {
        assert.equal((await api.call('DELETE', `/evidence/${body.id}`)).status, 204);
        continue;
      }
      assert.ok(response.status >= 400 && response.status < 500, `${shape.name}: ${JSON.stringify(body)}`);
      assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/, shape.name);
      assert.match(body.code, /^[a-z_]+$/, shape.name);
    }
    const expected = new Map([
      ['no boundary parameter', '400 invalid_multipart'],
      ['a boundary the body does not use', '400 invalid_multipart'],
      ['cut off inside the file', '400 invalid_multipart'],
      ['cut off inside the part headers', '400 invalid_multipart'],
      ['no closing delimiter', '400 invalid_multipart'],
      ['a field, then a file cut off', '400 invalid_multipart'],
      ['a file, then a field cut off', '400 invalid_multipart'],
      ['not multipart at all', '400 invalid_multipart'],
      ['a field named __proto__', '400 invalid_multipart'],
      ['a JSON field that is not JSON', '400 invalid_multipart'],
      ['two files', '413 too_many_parts'],
      ['a file over the size limit', '413 file_too_large'],
      ['a part without Content-Disposition', '400 invalid_request'],
    ]);
    for (const [name, answer] of expected)
      assert.ok(answers.includes(`${name}: ${answer}`), `${name}: ${answers.join('; ')}`);
    assert.deepEqual(storedFiles(), []);
    assert.deepEqual(filesUnder(dataDir), [], 'no staged .part file either');
    assert.deepEqual(await evidenceRows(api), []);
  });

  it('are deleted with their file; one that cannot be removed is logged, not an error', async (t) => {
    const { logger, lines } = capturingLogger('error');
    const { api, dataDir } = await startWithDataDir(t, {}, { logger });
    const upload = async () =>
      (await api.call('POST', '/evidence', { form: form({ bytes: PNG, name: 'a.png' }) })).body;
    const [kept, stuck] = [await upload(), await upload()];
    assert.equal(filesUnder(dataDir).length, 2);

    assert.equal((await api.call('DELETE', `/evidence/${kept.id}`)).status, 204);
    assert.equal(filesUnder(dataDir).length, 1, 'its file is gone');

    const [left] = filesUnder(dataDir) as [string];
    rmSync(left);
    mkdirSync(left);
    writeFileSync(path.join(left, 'inside'), 'x');
    assert.equal((await api.call('DELETE', `/evidence/${stuck.id}`)).status, 204);
    assert.equal((await api.call('GET', `/evidence/${stuck.id}`)).status, 404);
    const logged = lines.find((e) => e.msg === 'evidence file could not be removed');
    assert.equal(logged?.file, `${api.org.workspaceId}/${path.basename(left)}`);
  });

  it('belong to one organization: another one cannot download or delete them', async (t) => {
    const { api, storedFiles } = await startWithDataDir(t);
    const other = await api.createOrganization('Other');
    const evidence = (await api.call('POST', '/evidence', { form: form({ bytes: PDF, name: 'a.pdf' }) }))
      .body;
    assert.equal((await download(api, evidence.id, other.key)).response.status, 404);
    assert.equal((await api.call('DELETE', `/evidence/${evidence.id}`, { key: other.key })).status, 404);
    assert.equal(storedFiles().length, 1);
    assert.ok((await download(api, evidence.id)).bytes.equals(PDF));
  });

  it('are not recorded when the file cannot be written', async (t) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-evidence-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    writeFileSync(path.join(dataDir, 'evidence'), 'a file where the directory should be');
    const api = await startApiFixture(t, { env: { DATA_DIR: dataDir } });
    const failed = await api.call('POST', '/evidence', { form: form({ bytes: PDF, name: 'a.pdf' }) });
    assert.deepEqual([failed.status, failed.body.code], [500, 'internal_error']);
    assert.deepEqual(await evidenceRows(api), []);
    assert.equal(
      readFileSync(path.join(dataDir, 'evidence'), 'utf8'),
      'a file where the directory should be',
    );
  });

  it('answer 507 on a full disk and 503 on a failing one, logged once, keeping no record and no file', async (t) => {
    const cases = [
      { fault: 'ENOSPC', status: 507, code: 'insufficient_storage', failure: 'full', retryAfter: null },
      { fault: 'EDQUOT', status: 507, code: 'insufficient_storage', failure: 'full', retryAfter: null },
      { fault: 'EIO', status: 503, code: 'storage_unavailable', failure: 'unavailable', retryAfter: '30' },
    ] as const;
    for (const expected of cases) {
      const { logger, lines } = capturingLogger('info');
      const { api, storedFiles } = await startWithDataDir(
        t,
        {},
        { logger, wrapEvidenceStore: failingWrites(() => writeError(expected.fault)) },
      );
      const upload = form({ bytes: Buffer.alloc(1024 * 1024, 'a'), name: 'export.csv' }, [['title', 'x']]);
      const failed = await api.call('POST', '/evidence', { form: upload });
      assert.deepEqual(
        [failed.status, failed.body.code, failed.headers.get('retry-after')],
        [expected.status, expected.code, expected.retryAfter],
        expected.fault,
      );
      assert.match(failed.headers.get('content-type') ?? '', /^application\/problem\+json/);
      const errors = lines.filter((line) => Number(line.level) >= 50);
      assert.deepEqual(
        errors.map((line) => [line.event, line.failure, line.backend, line.workspaceId, line.reqId]),
        [['evidence.storage_failed', expected.failure, 'local', api.org.workspaceId, failed.body.request_id]],
        `${expected.fault}: one error line`,
      );
      assert.deepEqual(storedFiles(), [], `${expected.fault}: no file, not even a .part`);
      assert.deepEqual(await evidenceRows(api), []);
    }
  });

  it('read the rest of an upload the store failed to take, so its connection serves the next request', async (t) => {
    // Closed before the service, which waits for a connection still open.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => agent.destroy());
    const { api } = await startWithDataDir(
      t,
      {},
      { wrapEvidenceStore: failingWrites(() => writeError('ENOSPC')) },
    );
    const send = (method: string, apiPath: string, body?: Response) =>
      new Promise<number>((answered, failed) => {
        const headers: Record<string, string> = { authorization: `Bearer ${api.org.key}` };
        const type = body?.headers.get('content-type');
        if (type) headers['content-type'] = type;
        const request = httpRequest(`${api.url}/api/v1${apiPath}`, { method, agent, headers }, (response) =>
          response.resume().on('end', () => answered(response.statusCode ?? 0)),
        );
        request.on('error', failed);
        if (body?.body) Readable.fromWeb(body.body as WebReadableStream).pipe(request);
        else request.end();
      });
    const upload = new Response(form({ bytes: Buffer.alloc(4 * 1024 * 1024, 'a'), name: 'export.csv' }));
    assert.equal(await send('POST', '/evidence', upload), 507);
    const next = await Promise.race([send('GET', '/me'), delay(5000, 'stalled', { ref: false })]);
    assert.equal(next, 200, 'the same connection answers the next request');
  });
});

describe(`the evidence operation in the OpenAPI document on ${testDialect}`, () => {
  it('shows both forms of the body and the download as bytes', async (t) => {
    const api = await startApiFixture(t);
    const document = (await api.call('GET', '/openapi.json', { key: null })).body;
    const create = document.paths['/api/v1/evidence'].post;
    assert.deepEqual(Object.keys(create.requestBody.content).sort(), [
      'application/json',
      'multipart/form-data',
    ]);
    assert.equal(
      create.requestBody.content['application/json'].schema.$ref,
      '#/components/schemas/CreateEvidenceLinkBody',
    );
    assert.equal(
      create.requestBody.content['multipart/form-data'].schema.$ref,
      '#/components/schemas/EvidenceUploadForm',
    );
    const file = document.paths['/api/v1/evidence/{id}/file'].get.responses['200'];
    assert.deepEqual(Object.keys(file.content), ['application/octet-stream']);
  });

  it('declares the answers of a store that is full (507) or unavailable (503, with Retry-After)', async (t) => {
    const api = await startApiFixture(t);
    const document = (await api.call('GET', '/openapi.json', { key: null })).body;
    const { responses } = document.paths['/api/v1/evidence'].post;
    for (const status of ['503', '507'])
      assert.equal(
        responses[status]?.content['application/problem+json'].schema.$ref,
        '#/components/schemas/Problem',
        status,
      );
    assert.ok(responses['503'].headers['Retry-After'], '503: Retry-After');
  });
});
