// db-scope: sqlite (on postgres: test/web/invitations.test.ts, test/web/members.test.ts, test/web/glance.test.ts, test/web/control-page.test.ts, test/web/evidence.test.ts, test/web/tasks.test.ts, test/web/risks.test.ts, test/web/people.test.ts, test/web/policies.test.ts)

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { createApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { acknowledgePolicy } from '../../src/compliance/index.ts';
import {
  assertAccessible,
  collectConsoleErrors,
  launchBrowser,
  scrollsSideways,
} from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { type AppFixture, startAppFixture } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';
const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n',
);
const PEOPLE_CSV = [
  'email,name,title',
  'ada@example.com,Ada Lovelace,CISO',
  'grace@example.com,Grace Hopper,CTO',
  'mia@example.com,Mia Member,Engineer',
].join('\n');

/** The page passes axe at desktop width and at 390 px, where it must not scroll sideways. */
async function checkPage(page: Page, what: string): Promise<void> {
  await assertAccessible(page);
  await page.setViewportSize({ width: 390, height: 844 });
  assert.equal(await scrollsSideways(page), false, `${what} scrolls sideways at 390 px`);
  await assertAccessible(page);
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function readinessFigure(page: Page, overview: string): Promise<string> {
  await page.goto(overview);
  return (await page.locator('.readiness-figure').innerText()).trim();
}

/** What the audit log and the webhooks said of readiness records in a workspace, in order. */
async function trailOf(fixture: AppFixture, workspaceId: string) {
  const db = fixture.runtime.database.db;
  const records = /^(control|task|evidence|risk|vendor|person|policy)\./;
  const audit = await db
    .selectFrom('audit_events')
    .select(['action', 'actor_label'])
    .where('workspace_id', '=', workspaceId)
    .orderBy('id')
    .execute();
  const events = await db
    .selectFrom('webhook_events')
    .select('type')
    .where('workspace_id', '=', workspaceId)
    .orderBy('id')
    .execute();
  return {
    actions: audit.map((event) => event.action).filter((action) => records.test(action)),
    actors: new Set(audit.filter((event) => records.test(event.action)).map((event) => event.actor_label)),
    events: events.map((event) => event.type).filter((type) => records.test(type)),
  };
}

describe(`the readiness walk on ${testDialect}`, () => {
  it('takes a new workspace from empty to a first readiness figure in the browser; the API makes the same trail', async (t) => {
    const fixture = await startAppFixture(t, { listen: true });
    const base = fixture.baseUrl;
    const owner = await launchBrowser(t);
    const { workspaceId, invitationPath } = await fixture.provision({
      email: 'ada@example.com',
      name: 'Acme',
    });
    const ws = `${base}/w/${workspaceId}`;
    const page = await owner.newPage();
    page.setDefaultTimeout(15_000);
    const consoleErrors = collectConsoleErrors(page);
    await page.goto(`${base}${invitationPath}`);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await page.waitForURL(ws);
    const before = await readinessFigure(page, ws);
    assert.match(before, /^0% of applicable controls implemented: 0 of 93/);
    await checkPage(page, 'overview');

    // People, by CSV: preview, then apply.
    await page.goto(`${ws}/people/import`);
    await page.getByLabel('Or paste the rows').fill(PEOPLE_CSV);
    await page.getByRole('button', { name: 'Preview the import' }).click();
    await page.getByRole('button', { name: 'Apply the import' }).waitFor();
    await checkPage(page, 'people import preview');
    await page.getByRole('button', { name: 'Apply the import' }).click();
    await page.goto(`${ws}/people`);
    for (const name of ['Ada Lovelace', 'Grace Hopper', 'Mia Member'])
      await page.getByText(name).first().waitFor();
    await checkPage(page, 'people');

    // Two controls get an owner and are implemented, in the controls list.
    for (const reference of ['A.5.1', 'A.5.2']) {
      await page.goto(`${ws}/controls?q=${reference}`);
      const row = page.locator('tr', { hasText: `${reference} ` }).first();
      await row.getByLabel(/Status of/).selectOption('implemented');
      await row.getByLabel(/Owner of/).selectOption({ label: 'Ada Lovelace' });
      await row.getByRole('button', { name: /Save/ }).click();
      await page.getByText('Control updated.').waitFor();
    }
    await checkPage(page, 'controls');

    // Two exclusions, each with its justification, on the controls' own pages.
    for (const reference of ['A.7.1', 'A.7.2']) {
      await page.goto(`${ws}/controls/${reference}`);
      await page.locator('#status').selectOption('not_applicable');
      await page.getByLabel('Justification of applicability').fill('Fully remote: no premises of our own.');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByText('Control updated.').waitFor();
    }
    await checkPage(page, 'control');

    // Evidence: a file uploaded and linked to A.5.1 at upload.
    await page.goto(`${ws}/evidence/new`);
    await page.locator('#file').setInputFiles({
      name: 'information-security-policy.pdf',
      mimeType: 'application/pdf',
      buffer: PDF,
    });
    const files = page.locator('fieldset', { hasText: 'Controls the files show' });
    await files.locator('summary', { hasText: 'Organizational' }).click();
    await files.getByLabel('A.5.1 Policies for information security').check();
    await page.getByRole('button', { name: 'Upload files' }).click();
    await page.getByText('Files added.').waitFor();
    await checkPage(page, 'evidence');

    // A task: opened, then completed.
    await page.goto(`${ws}/tasks/new`);
    await page.getByLabel('Title').fill('Write the access control policy');
    await page.getByLabel('Assignee').selectOption({ label: 'Grace Hopper' });
    await page.getByLabel('Control').selectOption({ label: 'A.5.15 Access control' });
    await page.getByRole('button', { name: 'Create task' }).click();
    await page.getByText('Task created.').waitFor();
    await page.getByRole('button', { name: 'Complete task' }).click();
    await page.getByText('Task completed.').waitFor();
    await checkPage(page, 'task');

    // A risk: scored and treated, with its residual rating.
    await page.goto(`${ws}/risks/new`);
    await page.getByLabel('Title').fill('Laptop theft');
    await page.locator('#likelihood').selectOption('4');
    await page.locator('#impact').selectOption('5');
    await page.getByLabel('Owner').selectOption({ label: 'Ada Lovelace' });
    await page.getByLabel('Treatment', { exact: true }).selectOption('mitigate');
    await page.getByLabel(/Treatment plan/).fill('Full-disk encryption on every laptop.');
    await page.locator('#residual_likelihood').selectOption('2');
    await page.locator('#residual_impact').selectOption('2');
    await page.getByRole('button', { name: 'Create risk' }).click();
    await page.getByText('Risk created.').waitFor();
    await checkPage(page, 'risk');

    // A policy: written, approved; then a member acknowledges it.
    await page.goto(`${ws}/policies/new`);
    await page.getByLabel('Key').fill('access-control');
    await page.getByLabel('Title').fill('Access control policy');
    await page.getByLabel('Text').fill('# Purpose\n\nWho may reach what, and how that is **checked**.');
    await page.getByRole('button', { name: 'Create policy' }).click();
    await page.getByRole('button', { name: /Approve this draft as version 1/ }).click();
    await page.getByRole('button', { name: /I have read and acknowledge version 1/ }).waitFor();
    await checkPage(page, 'policy');
    const policyUrl = page.url().split('?')[0] ?? '';

    await page.goto(`${ws}/members`);
    await page.getByLabel('Email address').fill('mia@example.com');
    await page.getByLabel('Role', { exact: true }).selectOption('member');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByText('Invitation sent.').waitFor();
    const member = await (await launchBrowser(t)).newPage();
    member.setDefaultTimeout(15_000);
    await member.goto(`${base}${await fixture.latestInvitationPath('mia@example.com')}`);
    await member.getByLabel('New password').fill(PASSWORD);
    await member.getByRole('button', { name: /Accept/ }).click();
    await member.waitForURL(ws);
    await member.goto(policyUrl);
    await member.getByRole('button', { name: /I have read and acknowledge version 1/ }).click();
    await member.getByText(/You acknowledged version 1/).waitFor();
    await page.goto(policyUrl);
    assert.match(await page.locator('main').innerText(), /mia@example\.com/);

    const after = await readinessFigure(page, ws);
    assert.match(
      after,
      /^2\.2% of applicable controls implemented: 2 of 91 \(2 of 93 marked not applicable\)/,
    );
    await checkPage(page, 'overview after');
    assert.deepEqual(consoleErrors, []);

    // The same walk through the REST API, in a second workspace.
    const other = await fixture.provision({ email: 'ops@example.com', name: 'Acme API' });
    const created = await createApiKey(
      fixture.runtime.database.db,
      fixture.runtime.clock,
      { workspaceId: other.workspaceId, name: 'Walk' },
      OPERATOR_SOURCE,
    );
    assert.ok(created.ok);
    const api = async (method: string, url: string, body?: unknown, contentType = 'application/json') => {
      const response = await fixture.runtime.app.inject({
        method: method as 'POST',
        url: `/api/v1${url}`,
        headers: {
          authorization: `Bearer ${created.value.key}`,
          ...(body === undefined ? {} : { 'content-type': contentType }),
        },
        ...(body === undefined
          ? {}
          : { payload: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body) }),
      });
      assert.ok(response.statusCode < 300, `${method} ${url}: ${response.statusCode} ${response.body}`);
      return response.body ? JSON.parse(response.body) : undefined;
    };
    await api('POST', '/people/import', PEOPLE_CSV, 'text/csv');
    const people = (await api('GET', '/people')).data as { id: string; email: string }[];
    const ada = people.find((person) => person.email === 'ada@example.com')?.id;
    const grace = people.find((person) => person.email === 'grace@example.com')?.id;
    for (const reference of ['A.5.1', 'A.5.2']) {
      const control = (await api('GET', `/controls?q=${reference}`)).data[0];
      await api('PATCH', `/controls/${control.id}`, { status: 'implemented', owner_id: ada });
    }
    for (const reference of ['A.7.1', 'A.7.2']) {
      const control = (await api('GET', `/controls?q=${reference}`)).data[0];
      await api('PATCH', `/controls/${control.id}`, {
        status: 'not_applicable',
        justification: 'Fully remote: no premises of our own.',
      });
    }
    const policies = (await api('GET', '/controls?q=A.5.1')).data[0];
    const upload = new FormData();
    upload.append('control_ids', policies.id);
    upload.append('file', new Blob([PDF]), 'information-security-policy.pdf');
    const encoded = new Response(upload);
    await api(
      'POST',
      '/evidence',
      Buffer.from(await encoded.arrayBuffer()),
      encoded.headers.get('content-type') ?? '',
    );
    const accessControl = (await api('GET', '/controls?q=A.5.15')).data[0];
    const task = await api('POST', '/tasks', {
      title: 'Write the access control policy',
      assignee_id: grace,
      control_id: accessControl.id,
    });
    await api('PATCH', `/tasks/${task.id}`, { status: 'completed' });
    await api('POST', '/risks', {
      title: 'Laptop theft',
      likelihood: 4,
      impact: 5,
      owner_id: ada,
      treatment: 'mitigate',
      treatment_plan: 'Full-disk encryption on every laptop.',
      residual_likelihood: 2,
      residual_impact: 2,
    });
    const policy = await api('POST', '/policies', {
      key: 'access-control',
      title: 'Access control policy',
      body: '# Purpose\n\nWho may reach what, and how that is **checked**.',
    });
    await api('POST', `/policies/${policy.id}/approve`);
    // Acknowledging is a person's act, never an API key's: the member does it in the app.
    const memberId = (
      await fixture.runtime.database.db
        .selectFrom('users')
        .select('id')
        .where('email', '=', 'mia@example.com')
        .executeTakeFirstOrThrow()
    ).id;
    const deps = { db: fixture.runtime.database.db, clock: fixture.runtime.clock };
    await acknowledgePolicy(deps, other.workspaceId, policy.id, memberId, OPERATOR_SOURCE);

    const inApp = await trailOf(fixture, workspaceId);
    const viaApi = await trailOf(fixture, other.workspaceId);
    assert.deepEqual(viaApi.actions, inApp.actions, 'the same audit actions in the same order');
    assert.deepEqual(viaApi.events, inApp.events, 'the same webhook events in the same order');
    assert.deepEqual(inApp.actions, inApp.events, 'each change is one audit event and one webhook event');
    assert.ok(inApp.actors.has('ada@example.com') && inApp.actors.has('mia@example.com'));
    assert.ok([...viaApi.actors].some((actor) => actor.startsWith('API key')));
  });
});
