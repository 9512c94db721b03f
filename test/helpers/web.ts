import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import type { MailTransport, OutgoingMail } from '../../src/mail/index.ts';
import type { RuntimeOptions } from '../../src/runtime.ts';
import { provisionWorkspace } from '../../src/workspace/index.ts';
import { completeBody, createBody, expectSession, httpClient } from '../channels/acp-client.ts';
import { type PurchaseFixture, startPurchaseFixture } from './purchase.ts';
import { startTestRuntime, type TestRuntime } from './runtime.ts';

/** A port nothing listens on right now, so BASE_URL can name it before the service starts. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export interface WebFixture extends PurchaseFixture {
  /** `http://127.0.0.1:<port>`: the service listens there and builds its links with it. */
  baseUrl: string;
  /** An agent buys a workspace through ACP; answers the invitation link emailed to `email`. */
  buyWorkspace(
    email: string,
    itemId?: string,
  ): Promise<{ invitationUrl: string; workspaceId: string; orderUrl: string }>;
  /** Runs the email jobs and answers the newest invitation link sent to `email`. */
  latestInvitationUrl(email: string): Promise<string>;
}

const INVITATION_LINK = /https?:\/\/[^\s"]+\/invitations\/inv_[A-Za-z0-9_-]{43}/;

/**
 * The purchase fixture (PSP sandbox, SMTP peer) with the service listening on loopback; with
 * `pspEvents`, the sandbox delivers its signed checkout events to the service.
 */
export async function startWebFixture(
  t: TestContext,
  options: { pspEvents?: boolean } = {},
): Promise<WebFixture> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const fixture = await startPurchaseFixture(t, {
    env: { BASE_URL: baseUrl },
    ...(options.pspEvents ? { pspEventsTo: baseUrl } : {}),
  });
  await fixture.runtime.app.listen({ port, host: '127.0.0.1' });
  const acp = httpClient(baseUrl);

  async function latestInvitationUrl(email: string): Promise<string> {
    await fixture.deliverMail();
    // Other mail to the same address (a term reminder, say) may be delivered after the invitation.
    const link = fixture.smtp.received
      .filter((message) => message.to && JSON.stringify(message.to).includes(email))
      .map((message) => message.text?.match(INVITATION_LINK)?.[0])
      .filter((found) => found !== undefined)
      .at(-1);
    assert.ok(link, `no invitation link emailed to ${email}`);
    return link;
  }

  return {
    ...fixture,
    baseUrl,
    latestInvitationUrl,
    async buyWorkspace(email, itemId = 'svc-pro-annual') {
      const session = expectSession(await acp.create(createBody(itemId, email)), 201);
      const token = await fixture.mintToken();
      const completed = expectSession(await acp.complete(session.id, completeBody(token)));
      assert.equal(completed.status, 'completed');
      const invitationUrl = await latestInvitationUrl(email);
      const order = await fixture.runtime.database.db
        .selectFrom('orders')
        .select('workspace_id')
        .where('id', '=', completed.order?.id ?? '')
        .executeTakeFirstOrThrow();
      return {
        invitationUrl,
        workspaceId: order.workspace_id,
        orderUrl: completed.order?.permalink_url ?? '',
      };
    },
  };
}

export interface WebResponse {
  status: number;
  location: string | undefined;
  body: string;
  headers: Record<string, string | string[] | number | undefined>;
}

/**
 * A browser's view of the app through `inject`: keeps cookies, and posts forms with the
 * synchronizer token of the last page it fetched (unless told otherwise).
 */
export interface WebClient {
  get(url: string): Promise<WebResponse>;
  /** A field given as an array is sent once per value, as a group of checkboxes is. */
  post(
    url: string,
    form: Record<string, string | string[]>,
    headers?: Record<string, string>,
  ): Promise<WebResponse>;
  csrfToken(): string;
  cookies: Map<string, string>;
}

export function webClient(app: FastifyInstance, origin = 'http://svc.test'): WebClient {
  const cookies = new Map<string, string>();
  let token = '';
  const remember = (response: Awaited<ReturnType<FastifyInstance['inject']>>): WebResponse => {
    const setCookies = response.headers['set-cookie'];
    for (const cookie of Array.isArray(setCookies) ? setCookies : setCookies ? [setCookies] : []) {
      const [pair = ''] = cookie.split(';');
      const separator = pair.indexOf('=');
      const name = pair.slice(0, separator);
      const value = pair.slice(separator + 1);
      if (/Max-Age=0/.test(cookie)) cookies.delete(name);
      else cookies.set(name, value);
    }
    const found = /name="_csrf" value="([^"]+)"/.exec(response.body);
    if (found?.[1]) token = found[1];
    return {
      status: response.statusCode,
      location: response.headers.location as string | undefined,
      body: response.body,
      headers: response.headers,
    };
  };
  const cookieHeader = () => [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  return {
    cookies,
    csrfToken: () => token,
    async get(url) {
      return remember(
        await app.inject({ method: 'GET', url, headers: { accept: 'text/html', cookie: cookieHeader() } }),
      );
    },
    async post(url, form, headers = {}) {
      return remember(
        await app.inject({
          method: 'POST',
          url,
          headers: {
            accept: 'text/html',
            'content-type': 'application/x-www-form-urlencoded',
            origin,
            cookie: cookieHeader(),
            ...headers,
          },
          payload: new URLSearchParams(
            Object.entries({ _csrf: token, ...form }).flatMap(([name, value]): [string, string][] =>
              (Array.isArray(value) ? value : [value]).map((one) => [name, one]),
            ),
          ).toString(),
        }),
      );
    },
  };
}

export interface AppFixture {
  runtime: TestRuntime;
  /** Where the service listens when started with `listen` (BASE_URL too); otherwise its configured BASE_URL. */
  baseUrl: string;
  /** Every email the service sent, in order. */
  sent: OutgoingMail[];
  /** A workspace as the purchase pipeline makes it (Pro, one year); answers its id and invitation path. */
  provision(input: {
    email: string;
    name?: string;
  }): Promise<{ workspaceId: string; invitationPath: string }>;
  /** Runs the email jobs; the path of the newest invitation sent to `email`. */
  latestInvitationPath(email: string): Promise<string>;
}

/**
 * The service on a fresh database with a manual clock and an in-memory mail transport; with
 * `listen`, on a loopback port a browser can reach (and BASE_URL naming it).
 */
export async function startAppFixture(
  t: TestContext,
  options: {
    env?: Record<string, string>;
    listen?: boolean;
    wrapEvidenceStore?: RuntimeOptions['wrapEvidenceStore'];
    webhooks?: RuntimeOptions['webhooks'];
  } = {},
): Promise<AppFixture> {
  const port = options.listen ? await freePort() : undefined;
  const env = { ...(port ? { BASE_URL: `http://127.0.0.1:${port}` } : {}), ...options.env };
  const sent: OutgoingMail[] = [];
  const mailTransport: MailTransport = {
    kind: 'smtp',
    async send(mail) {
      sent.push(mail);
      return { messageId: String(sent.length) };
    },
    close() {},
  };
  const runtime = await startTestRuntime(t, {
    mailTransport,
    env,
    wrapEvidenceStore: options.wrapEvidenceStore,
    webhooks: options.webhooks,
  });
  if (port) await runtime.app.listen({ port, host: '127.0.0.1' });
  async function latestInvitationPath(email: string): Promise<string> {
    await runtime.jobs.drain();
    const link = sent
      .filter((mail) => mail.to === email)
      .at(-1)
      ?.text.match(INVITATION_LINK)?.[0];
    assert.ok(link, `no invitation link emailed to ${email}`);
    return new URL(link).pathname;
  }
  let orders = 0;
  return {
    runtime,
    baseUrl: runtime.config.baseUrl,
    sent,
    latestInvitationPath,
    async provision({ email, name }) {
      const clock = runtime.clock;
      const { workspace } = await inTransaction(runtime.database.db, (trx) =>
        provisionWorkspace(
          trx,
          {
            name: name ?? `Workspace for ${email}`,
            plan: 'pro',
            ownerEmail: email,
            term: { term: 'year', startsAt: clock.now(), channel: 'acp', orderId: `ord_test_${++orders}` },
          },
          { clock, baseUrl: runtime.config.baseUrl },
        ),
      );
      return { workspaceId: workspace.id, invitationPath: await latestInvitationPath(email) };
    },
  };
}

/** Accepts an invitation with a new password through the pages; answers the signed-in client. */
export async function acceptAsNewAccount(
  app: FastifyInstance,
  invitationPath: string,
  password = 'correct horse battery staple',
): Promise<WebClient> {
  const client = webClient(app);
  const page = await client.get(invitationPath);
  assert.equal(page.status, 200);
  const accepted = await client.post(`${invitationPath}/accept`, { password });
  assert.equal(accepted.status, 303, accepted.body);
  return client;
}

/** The owner of a new workspace, signed in to the app, with an API key of the workspace. */
export interface SignedInOwner {
  fixture: AppFixture;
  client: WebClient;
  workspaceId: string;
  page: string;
  // biome-ignore lint/suspicious/noExplicitAny: JSON answers of every shape
  api(method: string, url: string, body?: object): Promise<{ status: number; body: any }>;
}

export async function signedInOwner(
  t: TestContext,
  options: Parameters<typeof startAppFixture>[1] = {},
): Promise<SignedInOwner> {
  const fixture = await startAppFixture(t, options);
  const { workspaceId, invitationPath } = await fixture.provision({ email: 'owner@example.com' });
  const client = webClient(fixture.runtime.app, new URL(fixture.baseUrl).origin);
  await client.get(invitationPath);
  assert.equal(
    (await client.post(`${invitationPath}/accept`, { password: 'correct horse battery staple' })).status,
    303,
  );
  const created = await createApiKey(
    fixture.runtime.database.db,
    fixture.runtime.clock,
    { workspaceId, name: 'Glance test' },
    OPERATOR_SOURCE,
  );
  assert.ok(created.ok);
  const { key } = created.value;
  return {
    fixture,
    client,
    workspaceId,
    page: `/w/${workspaceId}`,
    async api(method, url, body) {
      const response = await fixture.runtime.app.inject({
        method: method as 'GET',
        url: `/api/v1${url}`,
        headers: { authorization: `Bearer ${key}` },
        ...(body ? { payload: body } : {}),
      });
      return { status: response.statusCode, body: response.body ? JSON.parse(response.body) : undefined };
    },
  };
}
