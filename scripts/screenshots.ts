/**
 * `npm run screenshots`: PNGs of the app's main pages in docs/screenshots/, taken with Debian's
 * Chromium (CHROMIUM_PATH) from a service on an in-memory database with a fixed clock (the dates
 * shown stay the same; the API key shown once is new on every run).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { createApiKey } from '../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../src/audit/index.ts';
import { loadConfig } from '../src/config.ts';
import { inTransaction } from '../src/db/transaction.ts';
import type { MailTransport, OutgoingMail } from '../src/mail/index.ts';
import { createRuntime } from '../src/runtime.ts';
import { DAY_MS, ManualClock } from '../src/shared/clock.ts';
import { provisionWorkspace } from '../src/workspace/index.ts';
import { freePort } from '../test/helpers/web.ts';

const OUT = path.join(import.meta.dirname, '..', 'docs', 'screenshots');
const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const sent: OutgoingMail[] = [];
const mailbox: MailTransport = {
  kind: 'smtp',
  async send(mail) {
    sent.push(mail);
    return { messageId: String(sent.length) };
  },
  close() {},
};

const port = await freePort();
// localhost, not 127.0.0.1: passkeys need a host name as their RP ID.
const baseUrl = `http://localhost:${port}`;
const clock = new ManualClock('2026-03-02T09:30:00.000Z');
const runtime = await createRuntime(
  loadConfig({
    NODE_ENV: 'test',
    BASE_URL: baseUrl,
    DATABASE_URL: 'sqlite::memory:',
    WEBHOOK_ALLOW_LOOPBACK: 'true',
  }),
  { clock, mailTransport: mailbox },
);
await runtime.app.listen({ port, host: '127.0.0.1' });

/** A webhook receiver on loopback that accepts every delivery. */
const receiver = createServer((request, response) => {
  request.resume();
  request.on('end', () => response.writeHead(204).end());
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));

async function buy(name: string, email: string): Promise<string> {
  await inTransaction(runtime.database.db, (trx) =>
    provisionWorkspace(
      trx,
      {
        name,
        plan: 'pro',
        ownerEmail: email,
        term: { term: 'year', startsAt: clock.now(), channel: 'acp', orderId: `ord_screenshot_${email}` },
      },
      { clock, baseUrl },
    ),
  );
  await runtime.jobs.drain();
  const link = sent.at(-1)?.text.match(/http\S+\/invitations\/\S+/)?.[0];
  if (!link) throw new Error('no invitation sent');
  return link;
}

const profile = mkdtempSync(path.join(tmpdir(), 'svc-screenshots-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM_PATH,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  viewport: { width: 1200, height: 800 },
});
mkdirSync(OUT, { recursive: true });

async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage: true });
  console.log(`docs/screenshots/${name}.png`);
}

try {
  const page = await browser.newPage();
  await page.goto(`${baseUrl}/`);
  await shoot(page, 'home');

  const invitation = await buy('Acme Robotics Ltd', 'ada@acme.example');
  await page.goto(invitation);
  await shoot(page, 'invitation');

  await page.getByLabel('New password').fill('correct horse battery staple');
  await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
  await page.waitForURL(/\/w\/ws_/);
  await shoot(page, 'workspace');

  const workspaceUrl = page.url();
  await page.goto(`${workspaceUrl}/integrations`);
  await page.getByLabel('Name').fill('CI pipeline');
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByLabel('Name').fill('Compliance agent');
  await page.getByLabel('Expires').selectOption('90');
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.locator('#new-key-value').waitFor();
  await shoot(page, 'integrations');

  const phone = await browser.newPage();
  await phone.setViewportSize({ width: 390, height: 844 });
  await phone.goto(`${workspaceUrl}/integrations`);
  await shoot(phone, 'integrations-phone');
  await phone.close();

  const devtools = await browser.newCDPSession(page);
  await devtools.send('WebAuthn.enable');
  await devtools.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
    },
  });
  await page.goto(`${baseUrl}/account/passkeys`);
  await page.getByLabel('Name').fill('Work laptop');
  await page.getByRole('button', { name: 'Add a passkey' }).click();
  await page.getByRole('cell', { name: 'Work laptop', exact: true }).waitFor();
  await shoot(page, 'passkeys');
  await page.goto(`${workspaceUrl}/integrations/webhooks`);
  await page
    .getByLabel('URL', { exact: true })
    .fill(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`);
  await page.getByLabel('Description (optional)').fill('Compliance agent inbox');
  for (const type of ['task.created', 'task.completed', 'risk.created']) {
    await page.getByLabel(type, { exact: true }).check();
  }
  await page.getByRole('button', { name: 'Create subscription' }).click();
  await page.locator('#new-secret-value').waitFor();
  await shoot(page, 'webhooks');

  const workspaceId = new URL(workspaceUrl).pathname.split('/')[2] ?? '';
  const created = await createApiKey(
    runtime.database.db,
    clock,
    { workspaceId, name: 'Screenshots' },
    OPERATOR_SOURCE,
  );
  if (!created.ok) throw new Error(`no screenshot key: ${created.error.code}`);
  const { key } = created.value;
  for (const title of ['Review access rights', 'Write the access control policy']) {
    await fetch(`${baseUrl}/api/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title }),
    });
  }
  await runtime.jobs.drain();
  await page.getByRole('link', { name: 'Open the subscription' }).click();
  await shoot(page, 'webhook');

  await page.goto(`${workspaceUrl}/members`);
  await page.getByLabel('Email address').fill('grace@acme.example');
  await page.getByLabel('Role').selectOption('admin');
  await page.getByRole('button', { name: 'Send invitation' }).click();
  await page.waitForURL(/notice=/);
  await shoot(page, 'members');

  await page.goto(`${workspaceUrl}/audit`);
  await shoot(page, 'audit');

  const api = (method: string, url: string, body: object) =>
    fetch(`${baseUrl}/api/v1${url}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((response) => response.json() as Promise<{ id: string }>);
  const controls = (
    (await fetch(`${baseUrl}/api/v1/controls?limit=200`, {
      headers: { authorization: `Bearer ${key}` },
    }).then((response) => response.json())) as { data: { id: string; reference: string }[] }
  ).data;
  const owner = await api('POST', '/people', { email: 'ada@acme.example', name: 'Ada Lovelace' });
  for (const [index, control] of controls.entries()) {
    const status =
      index % 7 === 3
        ? 'not_applicable'
        : index % 3 === 0
          ? 'implemented'
          : index % 4 === 1
            ? 'in_progress'
            : null;
    const justification =
      status === 'not_applicable' ? 'Outside the scope: no premises of our own.' : undefined;
    if (status) await api('PATCH', `/controls/${control.id}`, { status, owner_id: owner.id, justification });
  }
  for (const [title, likelihood, impact] of [
    ['Leavers keep access to SaaS tools', 4, 4],
    ['Laptop theft exposes customer data', 3, 5],
    ['Single cloud region outage', 2, 5],
    ['Phishing of finance staff', 4, 3],
    ['Unpatched build servers', 3, 3],
    ['Vendor loses backup tapes', 1, 4],
  ] as const) {
    await api('POST', '/risks', { title, likelihood, impact, treatment: 'mitigate' });
  }
  await api('POST', '/evidence', {
    title: 'Restore test, Q1 2026',
    url: 'https://wiki.acme.example/restore-test-2026-q1',
    control_ids: [controls[0]?.id],
  });
  await api('POST', '/evidence', {
    title: 'Access review, February 2026',
    url: 'https://wiki.acme.example/access-review-2026-02',
    control_ids: [controls[14]?.id],
  });
  const grace = await api('POST', '/people', { email: 'grace@acme.example', name: 'Grace Hopper' });
  const accessControl = controls[14];
  const task = await api('POST', '/tasks', {
    title: 'Run the quarterly access review',
    description: 'Check admin and production access against the leavers list.',
    due_date: '2026-03-20',
    assignee_id: grace.id,
    control_id: accessControl?.id,
  });
  await api('PATCH', `/tasks/${task.id}`, { due_date: '2026-03-13' });
  await api('POST', '/tasks', { title: 'Collect the signed NDAs', due_date: '2026-02-20' });
  const risk = await api('POST', '/risks', {
    title: 'Former staff keep access to production',
    description: 'Offboarding depends on a manual checklist.',
    likelihood: 4,
    impact: 5,
    owner_id: owner.id,
    treatment: 'mitigate',
    treatment_plan: 'Automate deprovisioning from the HR system; review access monthly.',
    residual_likelihood: 2,
    residual_impact: 3,
    due_date: '2026-04-30',
    control_ids: [accessControl?.id],
  });
  await api('POST', '/vendors', {
    name: 'Northwind Cloud',
    website: 'https://northwind.example',
    risk_level: 'high',
    status: 'active',
    owner_id: owner.id,
    next_review_date: '2026-02-28',
  });
  const policy = await api('POST', '/policies', {
    key: 'access-control',
    title: 'Access control policy',
    summary: 'Who may reach which systems, and how that is granted, reviewed and removed.',
    body: '## Purpose\n\nAccess is granted on **least privilege** and reviewed every quarter.\n\n## Rules\n\n- Every account belongs to a named person.\n- Admin access needs a second factor.\n- Leavers lose access on their last day.',
  });
  await api('POST', `/policies/${policy.id}/approve`, {});
  await api('POST', '/soa/approve', {});
  await api('PATCH', `/controls/${accessControl?.id}`, { status: 'implemented', owner_id: grace.id });
  await page.goto(`${workspaceUrl}/soa`);
  // The page's head: approval, what changed since, the versions; the 93 rows below are left out.
  await page.setViewportSize({ width: 1200, height: 1500 });
  await page.screenshot({ path: path.join(OUT, 'soa.png') });
  await page.setViewportSize({ width: 1200, height: 800 });
  await page.goto(workspaceUrl);
  await shoot(page, 'glance');
  await page.goto(`${workspaceUrl}/controls?theme=people`);
  await shoot(page, 'controls');
  for (const [name, url] of [
    ['tasks', '/tasks'],
    ['task', `/tasks/${task.id}`],
    ['risks', '/risks'],
    ['risk', `/risks/${risk.id}`],
    ['treatment-plan', '/treatment-plan'],
    ['vendors', '/vendors'],
    ['people', '/people'],
    ['policy', `/policies/${policy.id}`],
    ['evidence', '/evidence'],
    ['control', `/controls/${accessControl?.reference}`],
  ] as const) {
    await page.goto(`${workspaceUrl}${url}`);
    await shoot(page, name);
  }
  await page.goto(`${workspaceUrl}/people/import`);
  await page
    .getByLabel('Or paste the rows')
    .fill(
      'email,name,title\nada@acme.example,Ada Lovelace,CISO\nlin@acme.example,Lin Wei,Engineer\nnot-an-address,Nobody,',
    );
  await page.getByRole('button', { name: 'Preview the import' }).click();
  await shoot(page, 'people-import');
  await page.goto(`${workspaceUrl}/auditors`);
  await page.getByLabel('Email address').fill('iris@audit.example');
  await page.getByLabel('Access until').fill('2026-04-30');
  await page.getByRole('button', { name: 'Send invitation' }).click();
  await page.waitForURL(/notice=/);
  await shoot(page, 'auditors');
  await page.goto(`${workspaceUrl}/billing`);
  await shoot(page, 'billing');

  await page.getByRole('button', { name: 'Sign out' }).click();
  await runtime.jobs.drain();
  const auditorLink = sent
    .filter((mail) => mail.to === 'iris@audit.example')
    .at(-1)
    ?.text.match(/http\S+\/invitations\/\S+/)?.[0];
  if (!auditorLink) throw new Error('no auditor invitation sent');
  await page.goto(auditorLink);
  await page.getByLabel('New password').fill('correct horse battery staple');
  await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
  await page.waitForURL(/\/controls$/);
  await shoot(page, 'auditor-controls');
  await page.goto(page.url().replace(/\/controls$/, '/soa'));
  await page.screenshot({ path: path.join(OUT, 'auditor-soa.png') });
  await page.goto(page.url().replace(/\/soa$/, '/evidence-packages'));
  await page.getByRole('button', { name: 'Build the package' }).click();
  await page.waitForURL(/\/evidence-packages\/epk_\w+$/);
  await runtime.jobs.drain();
  await page.reload();
  await shoot(page, 'evidence-package');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.goto(`${baseUrl}/sign-in`);
  await page.getByLabel('Email address').fill('ada@acme.example');
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await shoot(page, 'sign-in');

  const expiring = await buy('Globex Corporation', 'hank@globex.example');
  clock.advance(8 * DAY_MS);
  await page.goto(expiring);
  await shoot(page, 'invitation-expired');

  await page.goto(`${baseUrl}/no-such-page`);
  await shoot(page, 'not-found');
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
  receiver.closeAllConnections();
  receiver.close();
  await runtime.close();
}
