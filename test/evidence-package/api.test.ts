// db-scope: both

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { DAY_MS } from '../../src/shared/clock.ts';
import { type ApiFixture, startApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';
import { checkedManifest, readZip } from './read-zip.ts';

/** The link as published (BASE_URL), fetched from where the test service listens. */
const local = (api: ApiFixture, url: string) => url.replace('http://svc.test', api.url);

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

const PDF = Buffer.from('%PDF-1.7\n1 0 obj <</Type /Catalog>> endobj\ntrailer <</Root 1 0 R>>\n%%EOF\n');
const POLICY = Buffer.from('# Information security policy\n\nApproved by the board.\n');
const REVIEW = Buffer.from('user,access,reviewed\nada,admin,yes\n');

const DOCUMENTS = [
  {
    path: 'statement-of-applicability/current.csv',
    content: Buffer.from('reference,applicable\nA.5.1,yes\n'),
  },
  { path: 'risk-treatment-plan/current.csv', content: Buffer.from('risk,treatment\nPhishing,mitigate\n') },
];

async function start(t: TestContext): Promise<ApiFixture> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-package-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  return startApiFixture(t, {
    env: { DATA_DIR: dataDir },
    auditDocuments: async () => DOCUMENTS,
  });
}

async function controlIds(api: ApiFixture): Promise<Map<string, string>> {
  const { body } = await api.call('GET', '/controls?limit=200');
  return new Map(
    body.data.map((control: { reference: string; id: string }) => [control.reference, control.id]),
  );
}

async function upload(api: ApiFixture, name: string, bytes: Buffer, controls: string[]): Promise<string> {
  const data = new FormData();
  data.append('title', name);
  for (const control of controls) data.append('control_ids', control);
  data.append('file', new Blob([bytes]), name);
  const created = await api.call('POST', '/evidence', { form: data });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body.id;
}

async function zipOf(api: ApiFixture, id: string): Promise<Buffer> {
  const response = await fetch(`${api.url}/api/v1/evidence-packages/${id}/file`, {
    headers: { authorization: `Bearer ${api.org.key}` },
  });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type'), 'application/zip');
  const bytes = Buffer.from(await response.arrayBuffer());
  assert.equal(response.headers.get('content-length'), String(bytes.length));
  return bytes;
}

describe(`evidence packages over the API on ${testDialect}`, () => {
  it('builds one zip of the documents, every evidence file under its control and a manifest that matches', async (t) => {
    const api = await start(t);
    const controls = await controlIds(api);
    const a51 = controls.get('A.5.1') ?? '';
    const a515 = controls.get('A.5.15') ?? '';
    const policy = await upload(api, 'policy.md', POLICY, [a51]);
    const review = await upload(api, 'access-review.csv', REVIEW, [a515, a51]);
    const loose = await upload(api, 'scan.pdf', PDF, []);
    const link = await api.call('POST', '/evidence', {
      json: { title: 'Ticket: MFA rollout', url: 'https://tickets.example.com/SEC-12', control_ids: [a515] },
    });
    assert.equal(link.status, 201);

    const requested = await api.call('POST', '/evidence-packages', { json: {} });
    assert.equal(requested.status, 202, JSON.stringify(requested.body));
    const id = requested.body.id;
    assert.match(id, /^epk_/);
    assert.equal(requested.body.status, 'queued');
    assert.equal(requested.body.status_url, `http://svc.test/api/v1/evidence-packages/${id}`);
    assert.equal(requested.headers.get('location'), requested.body.status_url);
    assert.match(
      requested.body.download_url,
      /^http:\/\/svc\.test\/api\/v1\/evidence-package-downloads\/epk_[\w-]{43}$/,
    );
    const stored = await api.runtime.database.db
      .selectFrom('evidence_packages')
      .selectAll()
      .executeTakeFirstOrThrow();
    const token = requested.body.download_url.split('/').at(-1);
    assert.equal(stored.download_token_hash, createHash('sha256').update(token).digest('hex'));
    assert.ok(!JSON.stringify(stored).includes(token), 'only the token hash is stored');

    const early = await api.call('GET', `/evidence-packages/${id}/file`);
    assert.equal(early.status, 409);
    assert.equal(early.body.code, 'package_not_ready');
    assert.equal(early.headers.get('retry-after'), '2');

    await api.runtime.jobs.drain();
    const status = await api.call('GET', `/evidence-packages/${id}`);
    assert.equal(status.status, 200);
    assert.equal(status.body.status, 'ready');
    assert.equal(status.body.progress.files_total, 7, 'two documents, three files, two indexes');
    assert.equal(status.body.progress.files_done, 7);
    assert.equal(status.body.file_url, `http://svc.test/api/v1/evidence-packages/${id}/file`);
    assert.equal(
      status.body.expires_at,
      new Date(api.runtime.clock.now().getTime() + 3 * DAY_MS).toISOString(),
    );

    const zip = await zipOf(api, id);
    assert.equal(status.body.size, zip.length);
    assert.equal(status.body.sha256, sha256(zip));
    const entries = await readZip(zip);
    const manifest = checkedManifest(entries);
    const byPath = new Map(entries.map((entry) => [entry.path, entry]));
    assert.deepEqual(
      entries.map((entry) => entry.path),
      [
        'statement-of-applicability/current.csv',
        'risk-treatment-plan/current.csv',
        'controls/A.5.1 Policies for information security/policy.md',
        'controls/A.5.1 Policies for information security/access-review.csv',
        'controls/Not linked to a control/scan.pdf',
        'evidence.csv',
        'links.csv',
        'manifest.json',
      ],
    );
    assert.ok(
      byPath.get('controls/A.5.1 Policies for information security/policy.md')?.bytes?.equals(POLICY),
    );
    assert.ok(
      byPath.get('controls/A.5.1 Policies for information security/access-review.csv')?.bytes?.equals(REVIEW),
    );
    assert.ok(
      byPath
        .get('statement-of-applicability/current.csv')
        ?.bytes?.equals(DOCUMENTS[0]?.content ?? Buffer.alloc(0)),
    );
    const reviewed = manifest.files.find((file) => file.evidence_id === review);
    assert.deepEqual(
      reviewed?.controls,
      ['A.5.1', 'A.5.15'],
      'every control of the evidence, in Annex A order',
    );
    assert.equal(manifest.files.find((file) => file.evidence_id === policy)?.sha256, sha256(POLICY));
    assert.equal(manifest.files.find((file) => file.evidence_id === loose)?.controls?.length, 0);
    assert.deepEqual(manifest.missing_files, []);
    assert.deepEqual(manifest.changed_since_upload, []);
    assert.equal(manifest.workspace_id, api.org.workspaceId);
    const links = byPath.get('links.csv')?.bytes?.toString() ?? '';
    assert.match(links, /Ticket: MFA rollout,https:\/\/tickets\.example\.com\/SEC-12,A\.5\.15,/);
    const index = byPath.get('evidence.csv')?.bytes?.toString() ?? '';
    assert.equal(index.trim().split('\r\n').length, 1 + 4, 'a header and every piece of evidence');

    const byLink = await fetch(local(api, requested.body.download_url));
    assert.equal(byLink.status, 200, 'the download link needs no API key');
    assert.ok(Buffer.from(await byLink.arrayBuffer()).equals(zip));
    const audit = await api.call('GET', '/audit-events?action=evidence_package.downloaded');
    const labels = audit.body.data.map((event: { actor: { label: string } }) => event.actor.label);
    assert.equal(labels.length, 2, 'each download is in the audit log');
    assert.equal(labels[0], 'Holder of the download link');
    assert.match(labels[1], /test key/);
  });

  it('keeps to the range of days the evidence was added on', async (t) => {
    const api = await start(t);
    api.runtime.clock.set('2026-01-10T09:00:00.000Z');
    await upload(api, 'january.md', Buffer.from('january\n'), []);
    api.runtime.clock.set('2026-02-20T23:59:00.000Z');
    await upload(api, 'february.md', Buffer.from('february\n'), []);
    api.runtime.clock.set('2026-03-01T12:00:00.000Z');
    await upload(api, 'march.md', Buffer.from('march\n'), []);

    const requested = await api.call('POST', '/evidence-packages', {
      json: { from: '2026-02-01', to: '2026-02-20' },
    });
    assert.equal(requested.status, 202);
    assert.equal(requested.body.from, '2026-02-01');
    assert.equal(requested.body.to, '2026-02-20');
    await api.runtime.jobs.drain();
    const entries = await readZip(await zipOf(api, requested.body.id));
    const manifest = checkedManifest(entries);
    assert.deepEqual(manifest.range, { from: '2026-02-01', to: '2026-02-20' });
    assert.deepEqual(
      manifest.files.filter((file) => file.evidence_id).map((file) => path.basename(file.path)),
      ['february.md'],
    );
  });

  it('refuses an upside-down or huge range, bad dates, a fourth build at once, and other workspaces', async (t) => {
    const api = await start(t);
    const refused = async (body: unknown, status: number, code: string) => {
      const answer = await api.call('POST', '/evidence-packages', { json: body });
      assert.equal(answer.status, status, JSON.stringify(answer.body));
      assert.equal(answer.body.code, code);
      assert.match(answer.headers.get('content-type') ?? '', /application\/problem\+json/);
      return answer;
    };
    await refused({ from: '2026-02-01', to: '2026-01-31' }, 400, 'invalid_range');
    await refused({ from: '2026-12-01' }, 400, 'invalid_range');
    const huge = await refused({ from: '1990-01-01', to: '2026-01-01' }, 400, 'range_too_long');
    assert.match(huge.body.detail, /1098 days/);
    await refused({ from: '2026-02-30' }, 400, 'invalid_request');
    await refused({ from: 'yesterday' }, 400, 'invalid_request');
    await refused({ to: '2026-01-01', extra: true }, 400, 'invalid_request');
    await refused({ from: 20260101 }, 400, 'invalid_request');

    const ids: string[] = [];
    for (let n = 0; n < 3; n++) {
      const answer = await api.call('POST', '/evidence-packages', {
        json: { from: '2023-03-02', to: '2026-03-01' },
      });
      assert.equal(answer.status, 202, JSON.stringify(answer.body));
      ids.push(answer.body.id);
    }
    const fourth = await refused({}, 409, 'packages_in_progress');
    assert.equal(fourth.headers.get('retry-after'), '60');

    const other = await api.createOrganization('Other Ltd');
    for (const route of [`/evidence-packages/${ids[0]}`, `/evidence-packages/${ids[0]}/file`]) {
      const answer = await api.call('GET', route, { key: other.key });
      assert.equal(answer.status, 404, route);
      assert.equal(answer.body.code, 'not_found');
    }
    const unknown = await fetch(`${api.url}/api/v1/evidence-package-downloads/epk_${'A'.repeat(43)}`);
    assert.equal(unknown.status, 404);
    const junk = await fetch(`${api.url}/api/v1/evidence-package-downloads/${'x'.repeat(200)}`);
    assert.equal(junk.status, 400);
  });

  it('expires after three days: the sweep removes the file, the links answer 410', async (t) => {
    const api = await start(t);
    await upload(api, 'policy.md', POLICY, []);
    const requested = await api.call('POST', '/evidence-packages', { json: {} });
    await api.runtime.jobs.drain();
    const row = await api.runtime.database.db
      .selectFrom('evidence_packages')
      .selectAll()
      .executeTakeFirstOrThrow();
    assert.ok(row.storage_name);
    assert.ok(
      await api.runtime.evidenceStore.open(row.storage_name).then((stream) => stream?.destroy() ?? stream),
    );

    api.runtime.clock.advance(3 * DAY_MS);
    const { sweepPackages } = await import('../../src/evidence-package/index.ts');
    assert.deepEqual(
      await sweepPackages({
        db: api.runtime.database.db,
        clock: api.runtime.clock,
        store: api.runtime.evidenceStore,
      }),
      { expired: 1 },
    );
    assert.equal(await api.runtime.evidenceStore.open(row.storage_name), undefined, 'the file is gone');
    const status = await api.call('GET', `/evidence-packages/${requested.body.id}`);
    assert.equal(status.body.status, 'expired');
    assert.equal(status.body.file_url, null);
    const file = await api.call('GET', `/evidence-packages/${requested.body.id}/file`);
    assert.equal(file.status, 410);
    assert.equal(file.body.code, 'package_expired');
    const byLink = await fetch(local(api, requested.body.download_url));
    assert.equal(byLink.status, 410);
  });
});
