// db-scope: both

import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startApiFixture } from '../helpers/api.ts';
import { capturedLogger } from '../helpers/logs.ts';
import { answerOf, type Json, readJson } from './helpers.ts';

/** The 2.x client negotiates the 2026-07-28 protocol when the server offers it (its default is the 2025 handshake). */
const MODERN = { versionNegotiation: { mode: 'auto' as const } };

/** Connects the official 2.x client with an API key in `Authorization: Bearer`. */
async function connect(url: string, key: string): Promise<Client> {
  const client = new Client({ name: 'tools-test', version: '1' }, MODERN);
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  return client;
}

test('every /api/v1 operation is a tool, called once with valid input and once with bad input', async (t) => {
  const api = await startApiFixture(t, { env: { WEBHOOK_ALLOW_LOOPBACK: 'true' } });
  const receiver = http.createServer((_request, response) => response.writeHead(204).end());
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    receiver.closeAllConnections();
    receiver.close();
  });
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const client = await connect(api.url, api.org.key);
  t.after(() => client.close());
  assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');

  const { tools } = await client.listTools();
  const names = tools.map((tool) => tool.name);
  // The tools are the API's operations: the OpenAPI document's, plus the file form of an upload.
  const document = await readJson(await fetch(`${api.url}/api/v1/openapi.json`));
  // Less what needs no key: the OpenAPI document, and a package's download link (the link is the credential).
  const operations = Object.values(
    document.paths as Record<string, Record<string, { operationId: string; security?: unknown[] }>>,
  )
    .flatMap((path) => Object.values(path))
    .filter((operation) => operation.security?.length !== 0)
    .map((operation) => operation.operationId);
  assert.deepEqual(names.filter((name) => !name.endsWith('WithFile')).sort(), [...operations].sort());
  assert.ok(names.includes('createEvidenceWithFile'));
  for (const tool of tools) {
    assert.equal(tool.inputSchema.type, 'object', tool.name);
    const method = /^(list|get|download)/.test(tool.name) ? 'GET' : undefined;
    if (method) assert.equal(tool.annotations?.readOnlyHint, true, tool.name);
    if (tool.name.startsWith('delete')) {
      assert.equal(tool.annotations?.destructiveHint, true, tool.name);
      assert.equal(tool.annotations?.idempotentHint, true, tool.name);
    }
    if (/^(create|update)/.test(tool.name)) assert.equal(tool.annotations?.readOnlyHint, false, tool.name);
  }
  const createTask = tools.find((tool) => tool.name === 'createTask');
  assert.ok(createTask);
  assert.deepEqual(createTask.inputSchema.required, ['body']);
  assert.equal(
    (createTask.inputSchema.properties as Json).body.properties.title.maxLength,
    document.components.schemas.CreateTaskBody.properties.title.maxLength,
    'the input schema is the route schema',
  );

  const validArgs = new Map<string, Record<string, unknown>>();
  const call = async (name: string, args: Record<string, unknown> = {}): Promise<Json> => {
    validArgs.set(name, args);
    const result = await client.callTool({ name, arguments: args });
    const answer = answerOf(result);
    assert.equal(answer.isError, false, `${name}: ${JSON.stringify(answer.body)}`);
    return answer.body ?? result;
  };

  await call('getMe');
  await call('updateMe', { body: { organization: { name: 'Acme Holdings' } } });
  const [control] = (await call('listControls', { limit: 2 })).data;
  await call('getControl', { id: control.id });
  const person = await call('upsertPerson', { body: { email: 'ada@example.com', name: 'Ada Lovelace' } });
  await call('updateControl', { id: control.id, body: { status: 'implemented', owner_id: person.id } });
  await call('getReadiness');
  const task = await call('createTask', { body: { title: 'Write the access control policy' } });
  await call('listTasks', { status: 'open' });
  await call('getTask', { id: task.id });
  await call('updateTask', { id: task.id, body: { status: 'completed' } });
  const link = await call('createEvidence', {
    body: { url: 'https://wiki.example.com/restore-test', title: 'Restore test' },
  });
  const file = await call('createEvidenceWithFile', {
    body: {
      file: {
        filename: 'review.txt',
        content_base64: Buffer.from('Access review done.\n').toString('base64'),
      },
      title: 'Access review',
      control_ids: [control.id],
    },
  });
  assert.equal(file.file.size, 20);
  await call('listEvidence', { control_id: control.id });
  await call('getEvidence', { id: link.id });
  const download = await client.callTool({ name: 'downloadEvidenceFile', arguments: { id: file.id } });
  validArgs.set('downloadEvidenceFile', { id: file.id });
  const [content] = download.content as Json[];
  assert.equal(Buffer.from(content.resource.blob, 'base64').toString(), 'Access review done.\n');
  await call('updateEvidence', { id: link.id, body: { control_ids: [control.id] } });
  await call('retireEvidence', { id: link.id });
  await call('restoreEvidence', { id: link.id });
  const risk = await call('createRisk', { body: { title: 'Laptop theft', likelihood: 3, impact: 4 } });
  await call('listRisks');
  await call('getRisk', { id: risk.id });
  await call('updateRisk', { id: risk.id, body: { likelihood: 2 } });
  const vendor = await call('createVendor', { body: { name: 'Example Cloud Hosting' } });
  await call('listVendors');
  await call('getVendor', { id: vendor.id });
  await call('updateVendor', { id: vendor.id, body: { status: 'under_review' } });
  await call('listPeople');
  await call('getPerson', { id: person.id });
  await call('updatePerson', { id: person.id, body: { title: 'CTO' } });
  await call('importPeople', { dry_run: true, body: 'email,name\nbob@example.com,Bob\n' });
  const policy = await call('upsertPolicy', {
    body: {
      key: 'access-control',
      title: 'Access Control Policy',
      body: '# Access control\n\nLeast privilege.',
    },
  });
  await call('listPolicies');
  await call('getPolicy', { id: policy.id });
  await call('updatePolicy', { id: policy.id, body: { summary: 'Who gets access to what.' } });
  await call('approvePolicy', { id: policy.id });
  const versions = await call('listPolicyVersions', { id: policy.id });
  await call('getPolicyVersion', { id: policy.id, number: versions.data[0].number });
  await call('listPolicyAcknowledgements', { id: policy.id });
  const hook = await call('createHook', { body: { url: hookUrl, event_types: ['task.completed'] } });
  await call('listHooks');
  await call('getHook', { id: hook.id });
  await call('updateHook', { id: hook.id, body: { description: 'Agent inbox' } });
  const delivery = await call('testHook', { id: hook.id });
  await call('listHookDeliveries', { id: hook.id });
  await call('redeliverHookDelivery', { id: hook.id, delivery_id: delivery.id });
  await call('rotateHookSecret', { id: hook.id, body: { grace_period_seconds: 3600 } });
  await call('getSoa');
  await call('downloadSoa', { format: 'xlsx' });
  const approved = await call('approveSoa');
  await call('listSoaVersions');
  await call('getSoaVersion', { number: approved.number });
  await call('downloadSoaVersion', { number: approved.number, format: 'pdf' });
  await call('getRiskTreatmentPlan');
  await call('downloadRiskTreatmentPlan', { format: 'csv' });
  const evidencePackage = await call('createEvidencePackage', { body: {} });
  await api.runtime.jobs.drain();
  await call('getEvidencePackage', { id: evidencePackage.id });
  await call('downloadEvidencePackage', { id: evidencePackage.id });
  await call('listAuditEvents', { limit: 5 });
  await call('deleteHook', { id: hook.id });
  await call('deleteEvidence', { id: file.id });
  await call('deleteRisk', { id: risk.id });
  await call('deleteVendor', { id: vendor.id });
  await call('deleteTask', { id: task.id });
  assert.deepEqual([...validArgs.keys()].sort(), [...names].sort(), 'every tool was called');

  // Bad input: the API's own refusal as a tool error (never a protocol error or a 500).
  for (const tool of tools) {
    const valid = validArgs.get(tool.name) ?? {};
    const properties = tool.inputSchema.properties as Json;
    const bad = properties.limit
      ? { ...valid, limit: 0 }
      : properties.body
        ? { ...valid, body: 12345 }
        : properties.id
          ? { ...valid, id: 'tsk_nosuchrecord' }
          : { not_an_argument: true };
    const answer = answerOf(await client.callTool({ name: tool.name, arguments: bad }));
    assert.equal(answer.isError, true, `${tool.name} with ${JSON.stringify(bad)}`);
    assert.ok([400, 404].includes(answer.body.status), `${tool.name}: ${JSON.stringify(answer.body)}`);
    assert.ok(
      ['invalid_request', 'not_found'].includes(answer.body.code),
      `${tool.name}: ${answer.body.code}`,
    );
    if (answer.body.code === 'invalid_request') assert.ok(answer.body.errors.length > 0, tool.name);
  }
  const unknown = answerOf(await client.callTool({ name: 'dropDatabase', arguments: {} }));
  assert.equal(unknown.body.code, 'unknown_tool');
  const notAnObject = answerOf(await client.callTool({ name: 'getTask', arguments: { id: { $ne: null } } }));
  assert.equal(notAnObject.body.code, 'invalid_request');
});

test('resources: the Annex A controls and the approved policies, paged; the 1.x client too', async (t) => {
  const api = await startApiFixture(t);
  const policy = await api.call('POST', '/policies', {
    json: { key: 'backup', title: 'Backup Policy', body: '# Backup\n\nDaily, tested quarterly.' },
  });
  await api.call('POST', '/policies', { json: { key: 'draft-only', title: 'Draft Policy', body: 'Draft.' } });
  await api.call('POST', `/policies/${policy.body.id}/approve`);
  const client = new LegacyClient({ name: 'legacy', version: '1' });
  const transport = new LegacyTransport(new URL(`${api.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${api.org.key}` } },
  });
  await client.connect(transport);
  t.after(() => client.close());
  assert.equal(transport.protocolVersion, '2025-11-25');
  assert.equal((await client.listTools()).tools.length > 50, true);
  const resources: { uri: string; name: string; mimeType?: string }[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listResources(cursor ? { cursor } : {});
    resources.push(...page.resources);
    cursor = page.nextCursor;
  } while (cursor);
  const controls = resources.filter((resource) => resource.mimeType === 'application/json');
  assert.equal(controls.length, 93);
  assert.ok(controls.some((resource) => resource.name === 'A.5.1 Policies for information security'));
  const policies = resources.filter((resource) => resource.mimeType === 'text/markdown');
  assert.deepEqual(
    policies.map((resource) => resource.name),
    ['Backup Policy'],
  );
  const read = await client.readResource({ uri: policies[0]?.uri ?? '' });
  assert.equal((read.contents[0] as { text: string }).text, '# Backup\n\nDaily, tested quarterly.');
  const control = await client.readResource({ uri: controls[0]?.uri ?? '' });
  assert.equal(JSON.parse((control.contents[0] as { text: string }).text).reference, 'A.5.1');
  await assert.rejects(client.readResource({ uri: `${api.url}/api/v1/tasks/tsk_x` }));

  // Another workspace's control is not found, as in the REST API.
  const other = await api.createOrganization('Other Ltd');
  const [foreign] = (await api.call('GET', '/controls?limit=1', { key: other.key })).body.data;
  await assert.rejects(client.readResource({ uri: `${api.url}/api/v1/controls/${foreign.id}` }));
});

test('limits each client address, answering 429 in the problem format with Retry-After', async (t) => {
  const api = await startApiFixture(t, { env: { API_RATE_LIMIT_PER_IP: '2' } });
  const post = () =>
    fetch(`${api.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
  assert.deepEqual([(await post()).status, (await post()).status], [401, 401]);
  const limited = await post();
  assert.equal(limited.status, 429);
  assert.match(limited.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  const body = await readJson(limited);
  assert.deepEqual([body.status, body.code], [429, 'rate_limited']);
});

test('plan rate limits apply to tool calls as to the REST API, per key', async (t) => {
  const api = await startApiFixture(t, { env: { API_RATE_LIMIT_PER_KEY: '3' } });
  const client = await connect(api.url, api.org.key);
  t.after(() => client.close());
  const answers = [];
  for (let i = 0; i < 4; i++) answers.push(answerOf(await client.callTool({ name: 'getMe', arguments: {} })));
  assert.deepEqual(
    answers.map((answer) => answer.isError),
    [false, false, false, true],
  );
  const limited = answers[3]?.body;
  assert.equal(limited.code, 'rate_limited');
  assert.equal(limited.status, 429);
  assert.ok(limited.retry_after_seconds >= 1);
  // The REST API counts the same key in the same window.
  assert.equal((await api.call('GET', '/me')).status, 429);
});

test('the endpoint asks for credentials and refuses bad ones without a 500', async (t) => {
  const { logger, lines } = capturedLogger('info');
  const api = await startApiFixture(t, { logger });
  const post = (headers: Record<string, string>, body: string) =>
    fetch(`${api.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body,
    });
  const initialize = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
  });
  const none = await post({}, initialize);
  assert.equal(none.status, 401);
  assert.equal(none.headers.get('access-control-allow-origin'), '*');
  assert.match(none.headers.get('access-control-expose-headers') ?? '', /www-authenticate/);
  const preflight = await fetch(`${api.url}/mcp`, {
    method: 'OPTIONS',
    headers: { origin: 'http://localhost:6274', 'access-control-request-method': 'POST' },
  });
  assert.equal(preflight.status, 204);
  assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /authorization/);
  assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer resource_metadata="/);
  const wrongKey = await post(
    { authorization: 'Bearer svc_live_000000000000000000000000000000000000' },
    initialize,
  );
  assert.equal(wrongKey.status, 401);
  const forged = await post(
    { authorization: `Bearer ${api.org.key}`, 'x-svc-principal-handle': 'guess' },
    initialize,
  );
  assert.equal(forged.status, 200, 'the handle header means nothing on the outside');
  const handleOnly = await fetch(`${api.url}/api/v1/me`, { headers: { 'x-svc-principal-handle': 'guess' } });
  assert.equal(handleOnly.status, 401);

  // Discovery: the home page's Agents box and the API reference's document name the endpoint.
  const home = await (await fetch(`${api.url}/`, { headers: { accept: 'text/html' } })).text();
  assert.match(home, /MCP server for a workspace: <code>\/mcp<\/code>/);
  const document = await readJson(await fetch(`${api.url}/api/v1/openapi.json`));
  assert.match(document.info.description, /Model Context Protocol server at `\/mcp`/);
  for (const body of ['{', '[]', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}']) {
    const response = await post({ authorization: `Bearer ${api.org.key}` }, body);
    assert.ok(response.status < 500, `${body}: ${response.status}`);
  }
  const errors = lines.filter((line) => JSON.parse(line).level >= 50);
  assert.deepEqual(errors, [], 'a refusal is an answer, not an error of the service');
});
