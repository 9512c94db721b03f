// db-scope: both

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import ExcelJS from 'exceljs';
import { extractText, getDocumentProxy } from 'unpdf';
import { auditDocuments } from '../../src/reports/index.ts';
import { canonicalJson } from '../../src/shared/jcs.ts';
import { type ApiFixture, startApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

interface Control {
  id: string;
  reference: string;
  title: string;
  theme: string;
  status: string;
  owner_id: string | null;
  justification: string | null;
}

interface SoaControl {
  control_id: string;
  reference: string;
  title: string;
  theme: string;
  applicable: boolean;
  justification: string | null;
  status: string;
  owner_id: string | null;
  owner_name: string | null;
  evidence_count: number;
  latest_evidence_at: string | null;
}

const sha256 = (bytes: string | Uint8Array) => createHash('sha256').update(bytes).digest('hex');

async function allControls(api: ApiFixture, key?: string): Promise<Control[]> {
  const response = await api.call('GET', '/controls?limit=200', key ? { key } : {});
  assert.equal(response.status, 200);
  return response.body.data;
}

async function patchControl(api: ApiFixture, reference: string, body: object): Promise<void> {
  const { id } = (await api.call('GET', `/controls/${reference}`)).body;
  const response = await api.call('PATCH', `/controls/${id}`, { json: body });
  assert.equal(response.status, 200, JSON.stringify(response.body));
}

async function download(
  api: ApiFixture,
  path: string,
): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const response = await fetch(`${api.url}/api/v1${path}`, {
    headers: { authorization: `Bearer ${api.org.key}` },
  });
  return {
    status: response.status,
    headers: response.headers,
    bytes: Buffer.from(await response.arrayBuffer()),
  };
}

/** A workspace with an owner, a few decided controls and evidence, as a team midway through. */
async function decidedWorkspace(api: ApiFixture) {
  const grace = await api.call('POST', '/people', {
    json: { email: 'grace@example.com', name: 'Grace Hopper' },
  });
  assert.equal(grace.status, 201, JSON.stringify(grace.body));
  await patchControl(api, 'A.5.1', {
    status: 'implemented',
    owner_id: grace.body.id,
    justification: 'Required by our customer contracts.',
  });
  await patchControl(api, 'A.7.1', {
    status: 'not_applicable',
    justification: 'No offices: all staff work remotely.',
  });
  await patchControl(api, 'A.8.24', { status: 'in_progress', owner_id: grace.body.id });
  const controls = await allControls(api);
  const idOf = (reference: string) => controls.find((control) => control.reference === reference)?.id ?? '';
  const first = await api.call('POST', '/evidence', {
    json: { url: 'https://wiki.example.com/isms-policy', title: 'ISMS policy', control_ids: [idOf('A.5.1')] },
  });
  assert.equal(first.status, 201, JSON.stringify(first.body));
  api.runtime.clock.advance(60_000);
  const second = await api.call('POST', '/evidence', {
    json: {
      url: 'https://wiki.example.com/crypto',
      title: 'Crypto standard',
      control_ids: [idOf('A.5.1'), idOf('A.8.24')],
    },
  });
  assert.equal(second.status, 201, JSON.stringify(second.body));
  const retired = await api.call('POST', '/evidence', {
    json: { url: 'https://wiki.example.com/old', title: 'Old policy', control_ids: [idOf('A.8.24')] },
  });
  assert.equal((await api.call('POST', `/evidence/${retired.body.id}/retire`)).status, 200);
  return { grace: grace.body, first: first.body, second: second.body };
}

describe(`the Statement of Applicability on ${testDialect}`, () => {
  it('states every one of the 93 controls as the controls and their evidence stand', async (t) => {
    const api = await startApiFixture(t);
    const { grace, second } = await decidedWorkspace(api);
    const soa = await api.call('GET', '/soa');
    assert.equal(soa.status, 200, JSON.stringify(soa.body));
    const controls = await allControls(api);
    assert.equal(controls.length, 93);
    assert.deepEqual(
      soa.body.controls.map((row: SoaControl) => [
        row.control_id,
        row.reference,
        row.title,
        row.theme,
        row.status,
        row.applicable,
        row.justification,
        row.owner_id,
      ]),
      controls.map((control) => [
        control.id,
        control.reference,
        control.title,
        control.theme,
        control.status,
        control.status !== 'not_applicable',
        control.justification,
        control.owner_id,
      ]),
      'one row per control, in Annex A order, with its state',
    );
    const row = (reference: string) =>
      soa.body.controls.find((control: SoaControl) => control.reference === reference) as SoaControl;
    assert.deepEqual(
      [row('A.5.1').owner_name, row('A.5.1').evidence_count, row('A.5.1').latest_evidence_at],
      ['Grace Hopper', 2, second.created_at],
    );
    assert.deepEqual(
      [row('A.8.24').evidence_count, row('A.8.24').latest_evidence_at],
      [1, second.created_at],
      'retired evidence no longer counts',
    );
    assert.deepEqual(
      [row('A.5.2').evidence_count, row('A.5.2').latest_evidence_at, row('A.5.2').owner_name],
      [0, null, null],
    );
    assert.equal(grace.name, 'Grace Hopper');
    assert.deepEqual(soa.body.totals, { controls: 93, applicable: 92, excluded: 1, implemented: 1 });
    assert.deepEqual(
      [soa.body.state, soa.body.gaps, soa.body.latest_version, soa.body.changes],
      ['never_approved', [], null, []],
    );

    const csv = await api.call('GET', '/soa', { headers: { accept: 'text/csv' } });
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
    assert.match(csv.headers.get('vary') ?? '', /Accept/);
    const lines = (csv.body as string).trimEnd().split('\r\n');
    assert.equal(lines.length, 94, 'a header and 93 rows');
    assert.equal(
      lines[0],
      'Reference,Control,Theme,Applicable,Justification,Implementation status,Owner,Evidence,Latest evidence',
    );
    assert.equal(
      lines[1],
      `A.5.1,Policies for information security,Organizational,Yes,Required by our customer contracts.,Implemented,Grace Hopper,2,${second.created_at.slice(0, 10)}`,
    );
  });

  it('lists an exclusion without a justification as a gap, and refuses approval until it is closed', async (t) => {
    const api = await startApiFixture(t);
    // The API refuses such an exclusion now; controls excluded before justifications existed have one.
    assert.equal(
      (await api.call('GET', '/controls/A.7.4')).status,
      200,
      'its first use gives the workspace its controls',
    );
    await api.runtime.database.db
      .updateTable('controls')
      .set({ status: 'not_applicable', justification: null })
      .where('workspace_id', '=', api.org.workspaceId)
      .where('reference', '=', 'A.7.4')
      .execute();
    const soa = await api.call('GET', '/soa');
    assert.deepEqual(
      soa.body.gaps.map((gap: { reference: string; code: string }) => [gap.reference, gap.code]),
      [['A.7.4', 'justification_missing']],
    );
    const refused = await api.call('POST', '/soa/approve');
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'soa_has_gaps');
    assert.match(refused.body.detail, /1 excluded control has no justification/);
    assert.deepEqual(
      refused.body.errors.map((error: { path: string }) => error.path),
      ['controls/A.7.4/justification'],
    );
    assert.deepEqual((await api.call('GET', '/soa/versions')).body, { data: [] }, 'nothing was approved');

    await patchControl(api, 'A.7.4', { justification: 'Cloud-hosted: no equipment of ours to monitor.' });
    assert.deepEqual((await api.call('GET', '/soa')).body.gaps, []);
    assert.equal((await api.call('POST', '/soa/approve')).status, 201);
  });

  it('freezes an approved version: its content, hash and files never change after later edits', async (t) => {
    const api = await startApiFixture(t);
    await decidedWorkspace(api);
    const approved = await api.call('POST', '/soa/approve');
    assert.equal(approved.status, 201, JSON.stringify(approved.body));
    assert.equal(approved.body.number, 1);
    assert.equal(approved.body.approved_at, api.runtime.clock.now().toISOString());
    assert.match(approved.body.approved_by, /^API key “test key”/);
    const version = (await api.call('GET', '/soa/versions/1')).body;
    const { sha256: hash, files, number, ...content } = version;
    assert.equal(
      sha256(canonicalJson({ ...content, version: number })),
      hash,
      'the SHA-256 is that of the canonical JSON of the content',
    );
    assert.equal(hash, approved.body.sha256);
    const frozen = new Map<string, Buffer>();
    for (const file of files as { format: string; sha256: string; size: number }[]) {
      const got = await download(api, `/soa/versions/1/files/${file.format}`);
      assert.equal(got.status, 200);
      assert.deepEqual([sha256(got.bytes), got.bytes.length], [file.sha256, file.size]);
      assert.match(
        got.headers.get('content-disposition') ?? '',
        new RegExp(`statement-of-applicability-v1\\.${file.format}`),
      );
      frozen.set(file.format, got.bytes);
    }
    assert.deepEqual([...frozen.keys()], ['csv', 'xlsx', 'pdf']);

    const again = await api.call('POST', '/soa/approve');
    assert.deepEqual([again.status, again.body.code], [409, 'nothing_to_approve']);

    api.runtime.clock.advance(3_600_000);
    await patchControl(api, 'A.5.2', { status: 'implemented', justification: 'Roles are in the handbook.' });
    const soa = (await api.call('GET', '/soa')).body;
    assert.equal(soa.state, 'changed_since_approval');
    assert.equal(soa.latest_version.number, 1);
    assert.deepEqual(soa.changes, [
      {
        control_id: soa.controls[1].control_id,
        reference: 'A.5.2',
        title: 'Information security roles and responsibilities',
        changes: [
          { field: 'justification', from: null, to: 'Roles are in the handbook.' },
          { field: 'status', from: 'not_started', to: 'implemented' },
        ],
      },
    ]);
    assert.deepEqual(
      (await api.call('GET', '/soa/versions/1')).body,
      version,
      'the version reads as approved',
    );
    for (const [format, bytes] of frozen) {
      assert.ok(
        (await download(api, `/soa/versions/1/files/${format}`)).bytes.equals(bytes),
        `${format} unchanged`,
      );
    }

    const second = await api.call('POST', '/soa/approve');
    assert.deepEqual([second.status, second.body.number], [201, 2]);
    assert.notEqual(second.body.sha256, hash);
    const versions = (await api.call('GET', '/soa/versions')).body.data;
    assert.deepEqual(
      versions.map((entry: { number: number }) => entry.number),
      [2, 1],
    );
    assert.equal((await api.call('GET', '/soa')).body.state, 'approved');
    const audit = (await api.call('GET', '/audit-events?action=soa.approved')).body.data;
    assert.deepEqual(
      audit.map((event: { target: { label: string } }) => event.target.label),
      ['Statement of Applicability version 2', 'Statement of Applicability version 1'],
    );
  });

  it('writes a workbook a reader opens with the same rows, frozen header, filter and widths', async (t) => {
    const api = await startApiFixture(t);
    await decidedWorkspace(api);
    await api.call('POST', '/soa/approve');
    const soa = (await api.call('GET', '/soa')).body;
    const csv = (await download(api, '/soa/versions/1/files/csv')).bytes.toString('utf8');
    const xlsx = await download(api, '/soa/versions/1/files/xlsx');
    assert.equal(
      xlsx.headers.get('content-type'),
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    );
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(xlsx.bytes as unknown as ArrayBuffer);
    const sheet = workbook.getWorksheet('Statement of Applicability');
    assert.ok(sheet);
    assert.equal(sheet.rowCount, 94);
    const values = (index: number) => (sheet.getRow(index).values as unknown[]).slice(1);
    assert.deepEqual(values(1), [
      'Reference',
      'Control',
      'Theme',
      'Applicable',
      'Justification',
      'Implementation status',
      'Owner',
      'Evidence',
      'Latest evidence',
    ]);
    const csvRows = csv.trimEnd().split('\r\n').slice(1);
    soa.controls.forEach((control: SoaControl, index: number) => {
      const row = values(index + 2);
      assert.deepEqual(
        [row[0], row[1], row[3], row[4] ?? null, row[5], row[6] ?? null, row[7]],
        [
          control.reference,
          control.title,
          control.applicable ? 'Yes' : 'No',
          control.justification,
          {
            not_started: 'Not started',
            in_progress: 'In progress',
            implemented: 'Implemented',
            not_applicable: 'Not applicable',
          }[control.status],
          control.owner_name,
          control.evidence_count,
        ],
      );
      assert.ok(csvRows[index]?.startsWith(`${control.reference},`), 'the CSV has the same row');
    });
    assert.deepEqual(sheet.views[0], { ...sheet.views[0], state: 'frozen', ySplit: 1 });
    assert.ok(sheet.autoFilter, 'a filter on the header');
    assert.equal(sheet.getColumn(5).width, 60);
    const about = workbook.getWorksheet('About');
    const aboutText = JSON.stringify(about?.getSheetValues());
    assert.match(aboutText, /Acme Ltd/);
    assert.ok(aboutText.includes(soa.latest_version.sha256));
  });

  it('writes a PDF with a title page and a paginated table, each page numbered', async (t) => {
    const api = await startApiFixture(t);
    await decidedWorkspace(api);
    const approved = (await api.call('POST', '/soa/approve')).body;
    const pdf = await download(api, '/soa/versions/1/files/pdf');
    assert.equal(pdf.headers.get('content-type'), 'application/pdf');
    const document = await getDocumentProxy(new Uint8Array(pdf.bytes));
    const { totalPages, text } = await extractText(document, { mergePages: false });
    assert.ok(totalPages >= 3, `a title page and the 93 rows over several pages, got ${totalPages}`);
    assert.equal(text.length, totalPages);
    const [title = '', ...tablePages] = text;
    assert.match(title, /Statement of Applicability/);
    assert.match(title, /Acme Ltd/);
    assert.match(title, /Version\s+1/);
    assert.ok(title.includes(approved.sha256), 'the title page names the SHA-256');
    assert.match(title, /by API key “test key”/);
    text.forEach((page, index) => {
      assert.ok(page.includes(`Page ${index + 1} of ${totalPages}`), `page ${index + 1} is numbered`);
    });
    for (const page of tablePages)
      assert.match(page, /Reference\s+Control\s+Theme\s+Applicable\s+Justification/);
    const references = tablePages.join('\n').match(/A\.\d+\.\d+/g) ?? [];
    const expected = (await allControls(api)).map((control) => control.reference);
    assert.deepEqual(
      references.filter((reference) => expected.includes(reference)),
      expected,
      'every control once, in order',
    );
    assert.match(tablePages.join('\n'), /No offices: all staff work remotely\./);
  });

  it('gives the evidence package the current documents and every version as frozen', async (t) => {
    const api = await startApiFixture(t);
    await decidedWorkspace(api);
    await api.call('POST', '/soa/approve');
    await patchControl(api, 'A.5.2', { status: 'in_progress' });
    await api.call('POST', '/soa/approve');
    const documents = await auditDocuments(api.runtime.database.db, api.org.workspaceId, api.runtime.clock);
    assert.deepEqual(
      documents.map((file) => file.path),
      [
        'statement-of-applicability/current.csv',
        'statement-of-applicability/current.xlsx',
        'statement-of-applicability/current.pdf',
        'statement-of-applicability/v1.csv',
        'statement-of-applicability/v1.xlsx',
        'statement-of-applicability/v1.pdf',
        'statement-of-applicability/v2.csv',
        'statement-of-applicability/v2.xlsx',
        'statement-of-applicability/v2.pdf',
        'risk-treatment-plan/current.csv',
        'risk-treatment-plan/current.xlsx',
        'risk-treatment-plan/current.pdf',
      ],
    );
    for (const file of documents.filter((document) => /\/v\d/.test(document.path))) {
      const [, number, format] = /v(\d+)\.(\w+)$/.exec(file.path) ?? [];
      assert.ok(
        file.content.equals((await download(api, `/soa/versions/${number}/files/${format}`)).bytes),
        file.path,
      );
    }
    const current = documents[0]?.content.toString('utf8') ?? '';
    assert.match(current, /^Reference,Control,/);
    assert.deepEqual(await auditDocuments(api.runtime.database.db, 'ws_not_there'), []);
  });

  it('answers bad input and other workspaces with clear errors', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other Ltd');
    assert.equal((await api.call('POST', '/soa/approve', { key: other.key })).status, 201);
    for (const path of ['/soa/versions/1', '/soa/versions/1/files/pdf', '/soa/versions/99']) {
      const response = await api.call('GET', path);
      assert.deepEqual([response.status, response.body.code], [404, 'not_found'], path);
    }
    for (const path of [
      '/soa/versions/0',
      '/soa/versions/abc',
      '/soa/versions/1/files/docx',
      '/soa/files/exe',
      '/soa/versions/99999999999',
    ]) {
      const response = await api.call('GET', path);
      assert.deepEqual([response.status, response.body.code], [400, 'invalid_request'], path);
    }
    assert.equal((await api.call('POST', '/soa/approve', { json: { anything: 1 } })).status, 201);
    assert.equal((await api.call('GET', '/soa', { key: null })).status, 401);
  });
});

describe(`the risk treatment plan on ${testDialect}`, () => {
  it('lists every open risk with its scores, treatment, owner, due date and controls, in every format', async (t) => {
    const api = await startApiFixture(t);
    const person = (await api.call('POST', '/people', { json: { email: 'ada@example.com', name: 'Ada' } }))
      .body;
    const controls = await allControls(api);
    const idOf = (reference: string) => controls.find((control) => control.reference === reference)?.id ?? '';
    const laptops = await api.call('POST', '/risks', {
      json: {
        title: 'Laptop theft',
        likelihood: 3,
        impact: 4,
        treatment: 'mitigate',
        treatment_plan: 'Full-disk encryption.',
        residual_likelihood: 1,
        residual_impact: 4,
        due_date: '2026-12-31',
        owner_id: person.id,
        control_ids: [idOf('A.8.24'), idOf('A.7.9')],
      },
    });
    assert.equal(laptops.status, 201, JSON.stringify(laptops.body));
    const phishing = await api.call('POST', '/risks', {
      json: { title: '=Phishing', likelihood: 4, impact: 5 },
    });
    const closed = await api.call('POST', '/risks', {
      json: { title: 'Old risk', likelihood: 5, impact: 5, status: 'closed' },
    });
    assert.equal(closed.status, 201);

    const plan = await api.call('GET', '/risk-treatment-plan');
    assert.equal(plan.status, 200, JSON.stringify(plan.body));
    assert.deepEqual(
      plan.body.risks.map((risk: { risk_id: string }) => risk.risk_id),
      [phishing.body.id, laptops.body.id],
      'open risks only, most severe first',
    );
    assert.deepEqual(plan.body.risks[1], {
      risk_id: laptops.body.id,
      title: 'Laptop theft',
      likelihood: 3,
      impact: 4,
      score: 12,
      severity: 'high',
      residual_likelihood: 1,
      residual_impact: 4,
      residual_score: 4,
      residual_severity: 'low',
      treatment: 'mitigate',
      treatment_plan: 'Full-disk encryption.',
      owner_id: person.id,
      owner_name: 'Ada',
      due_date: '2026-12-31',
      controls: [
        { id: idOf('A.7.9'), reference: 'A.7.9', title: 'Security of assets off-premises' },
        { id: idOf('A.8.24'), reference: 'A.8.24', title: 'Use of cryptography' },
      ],
    });

    const csv = await api.call('GET', '/risk-treatment-plan', { headers: { accept: 'text/csv' } });
    assert.equal(
      csv.body,
      'Risk,Score before,Score after,Treatment,Plan,Owner,Due,Controls\r\n' +
        "'=Phishing,20 Critical,,Untreated,,,,\r\n" +
        'Laptop theft,12 High,4 Low,Mitigate,Full-disk encryption.,Ada,2026-12-31,"A.7.9, A.8.24"\r\n',
      'a formula-looking title is neutralised',
    );
    const xlsx = await download(api, '/risk-treatment-plan/files/xlsx');
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(xlsx.bytes as unknown as ArrayBuffer);
    const sheet = workbook.getWorksheet('Risk treatment plan');
    assert.ok(sheet);
    assert.deepEqual(
      (sheet.getRow(2).values as unknown[]).slice(1, 3),
      ['=Phishing', '20 Critical'],
      'text, not a formula',
    );
    assert.equal(sheet.getCell('A2').type, ExcelJS.ValueType.String);
    const pdf = await download(api, '/risk-treatment-plan/files/pdf');
    const { totalPages, text } = await extractText(await getDocumentProxy(new Uint8Array(pdf.bytes)), {
      mergePages: false,
    });
    assert.equal(totalPages, 2);
    assert.match(text[0] ?? '', /Risk treatment plan[\s\S]*Acme Ltd/);
    assert.match(text[1] ?? '', /Laptop theft[\s\S]*Full-disk encryption\.[\s\S]*A\.7\.9, A\.8\.24/);
    assert.match(text[1] ?? '', /Page 2 of 2/);
  });
});
