import type { TestContext } from 'node:test';
import { API_PREFIX } from '../../src/api/index.ts';
import { createApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { newId } from '../../src/shared/ids.ts';
import { provisionWorkspace } from '../../src/workspace/index.ts';
import { startTestRuntime, type TestRuntime } from './runtime.ts';

/** An organization (workspace) with an API key, as the API sees it. */
export interface Organization {
  workspaceId: string;
  key: string;
  keyId: string;
}

// biome-ignore lint/suspicious/noExplicitAny: tests read JSON bodies of every shape
export interface ApiResponse<Body = any> {
  status: number;
  headers: Headers;
  body: Body;
}

export interface CallOptions {
  /** The API key; `null` sends none. Defaults to the fixture's first organization. */
  key?: string | null;
  json?: unknown;
  form?: FormData;
  headers?: Record<string, string>;
}

export interface ApiFixture {
  runtime: TestRuntime;
  /** The service on a real socket. */
  url: string;
  org: Organization;
  createOrganization(name?: string): Promise<Organization>;
  /** `path` is relative to /api/v1. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read JSON bodies of every shape
  call<Body = any>(method: string, path: string, options?: CallOptions): Promise<ApiResponse<Body>>;
}

/** A service on a fresh database, listening on loopback, with one organization and its key. */
export async function startApiFixture(
  t: TestContext,
  options: Parameters<typeof startTestRuntime>[1] = {},
): Promise<ApiFixture> {
  const runtime = await startTestRuntime(t, options);
  const url = await runtime.app.listen({ host: '127.0.0.1', port: 0 });
  const createOrganization = (name?: string) => createOrganizationIn(runtime, name);
  const org = await createOrganization();
  return {
    runtime,
    url,
    org,
    createOrganization,
    async call(method, path, callOptions = {}) {
      const key = callOptions.key === undefined ? org.key : callOptions.key;
      const headers: Record<string, string> = { ...callOptions.headers };
      if (key !== null) headers.authorization ??= `Bearer ${key}`;
      let body: string | FormData | undefined;
      if (callOptions.json !== undefined) {
        headers['content-type'] ??= 'application/json';
        body = JSON.stringify(callOptions.json);
      } else if (callOptions.form) {
        body = callOptions.form;
      }
      const response = await fetch(`${url}${API_PREFIX}${path}`, { method, headers, body });
      const text = await response.text();
      const type = response.headers.get('content-type') ?? '';
      return {
        status: response.status,
        headers: response.headers,
        body: text && type.includes('json') ? JSON.parse(text) : text,
      };
    },
  };
}

/** A workspace on the Pro plan with an API key, as an organization using the API has. */
export async function createOrganizationIn(runtime: TestRuntime, name = 'Acme Ltd'): Promise<Organization> {
  const now = runtime.clock.now();
  const { workspace } = await inTransaction(runtime.database.db, (trx) =>
    provisionWorkspace(
      trx,
      {
        name,
        plan: 'pro',
        ownerEmail: `owner+${newId('x', now).slice(2, 10)}@example.com`,
        term: { term: 'year', startsAt: now, channel: 'operator', orderId: newId('opord', now) },
      },
      { clock: runtime.clock, baseUrl: runtime.config.baseUrl },
    ),
  );
  const created = await createApiKey(
    runtime.database.db,
    runtime.clock,
    { workspaceId: workspace.id, name: 'test key' },
    OPERATOR_SOURCE,
  );
  if (!created.ok) throw new Error(`no API key for the new workspace: ${created.error.code}`);
  return { workspaceId: workspace.id, key: created.value.key, keyId: created.value.info.id };
}

/** Every page of a list, following `next_cursor`. */
export async function walkPages<Item>(
  api: ApiFixture,
  path: string,
  options: CallOptions = {},
): Promise<{ items: Item[]; pages: number }> {
  const items: Item[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const separator = path.includes('?') ? '&' : '?';
    const response: ApiResponse<{ data: Item[]; next_cursor: string | null }> = await api.call(
      'GET',
      cursor ? `${path}${separator}cursor=${encodeURIComponent(cursor)}` : path,
      options,
    );
    if (response.status !== 200)
      throw new Error(`GET ${path} answered ${response.status}: ${JSON.stringify(response.body)}`);
    items.push(...response.body.data);
    cursor = response.body.next_cursor;
    pages++;
  } while (cursor);
  return { items, pages };
}

/** The events the service published (the webhook outbox), oldest first: each type and `data`. */
export async function publishedEvents(
  api: ApiFixture,
  // biome-ignore lint/suspicious/noExplicitAny: event data of every shape
): Promise<{ type: string; data: any }[]> {
  const events = await api.runtime.database.db
    .selectFrom('webhook_events')
    .select(['type', 'payload'])
    .orderBy('id')
    .execute();
  return events.map((event) => ({ type: event.type, data: JSON.parse(event.payload).data }));
}
