// db-scope: both

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { listConnectedClients, REFRESH_TOKEN_TTL_MS, sweepOAuthData } from '../../src/oauth/index.ts';
import { MINUTE_MS } from '../../src/shared/clock.ts';
import { assertAccessible, launchBrowser } from '../helpers/browser.ts';
import {
  answerOf,
  consentOverHttp,
  PASSWORD,
  readJson,
  startClientSite,
  startMcpFixture,
  TestProvider,
} from './helpers.ts';

/** The 2.x client negotiates the 2026-07-28 protocol when the server offers it (its default is the 2025 handshake). */
const MODERN = { versionNegotiation: { mode: 'auto' as const } };

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'curl', version: '1' } },
};

test('an MCP client is connected through OAuth, consented in the browser, refreshed, and stopped by a revocation under Integrations', async (t) => {
  const browser = await launchBrowser(t);
  const fixture = await startMcpFixture(t);
  const { baseUrl, mcpUrl, workspaceA } = fixture;
  const site = await startClientSite(t, 'Claude');

  // Discovery, as a client without credentials meets it.
  const refused = await fetch(mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(INITIALIZE),
  });
  assert.equal(refused.status, 401);
  const metadataUrl = `${baseUrl}/.well-known/oauth-protected-resource/mcp`;
  assert.equal(refused.headers.get('www-authenticate'), `Bearer resource_metadata="${metadataUrl}"`);
  const resource = await readJson(await fetch(metadataUrl));
  assert.equal(resource.resource, mcpUrl.href);
  assert.deepEqual(resource.authorization_servers, [baseUrl]);
  assert.deepEqual(await readJson(await fetch(`${baseUrl}/.well-known/oauth-protected-resource`)), resource);
  const server = await readJson(await fetch(`${baseUrl}/.well-known/oauth-authorization-server`));
  assert.equal(server.issuer, baseUrl);
  assert.deepEqual(server.code_challenge_methods_supported, ['S256']);
  assert.equal(server.client_id_metadata_document_supported, true);
  assert.equal(server.authorization_response_iss_parameter_supported, true);
  assert.deepEqual(server.grant_types_supported, ['authorization_code', 'refresh_token']);

  // The official 2.x client, known by its Client ID Metadata Document.
  const provider = new TestProvider({
    redirectUrl: site.redirectUrl,
    name: 'Claude',
    clientMetadataUrl: site.metadataUrl,
  });
  await assert.rejects(
    new Client({ name: 'claude-test', version: '1' }, MODERN).connect(
      new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }),
    ),
    UnauthorizedError,
  );
  const authorizationUrl = provider.authorizationUrl;
  assert.ok(authorizationUrl);
  assert.equal(authorizationUrl.searchParams.get('client_id'), site.metadataUrl);
  assert.equal(authorizationUrl.searchParams.get('code_challenge_method'), 'S256');
  assert.equal(authorizationUrl.searchParams.get('resource'), mcpUrl.href);
  assert.equal(provider.info?.client_id, site.metadataUrl, 'no registration: the URL is the client id');

  // The person signs in and consents in Chromium.
  const page = await browser.newPage();
  await page.goto(authorizationUrl.href);
  await page.waitForURL(/\/sign-in\?next=/);
  await page.fill('#email', 'owner@example.com');
  await page.fill('#password', PASSWORD);
  await Promise.all([page.waitForURL(/\/oauth\/authorize\?/), page.click('form button[type=submit]')]);
  assert.match((await page.textContent('h1')) ?? '', /Claude wants to work in your workspace/);
  await assertAccessible(page);
  await page.screenshot({ path: '/tmp/mcp-consent.png', fullPage: true });
  await page.check(`input[name=workspace_id][value="${workspaceA}"]`);
  await page.check('#access-write');
  await Promise.all([
    page.waitForURL((url) => url.href.startsWith(site.redirectUrl)),
    page.click('button[value=allow]'),
  ]);
  const callback = site.callbacks.at(-1);
  assert.ok(callback);
  assert.ok(callback.get('code'));
  assert.equal(callback.get('iss'), baseUrl);
  assert.equal(callback.get('state'), authorizationUrl.searchParams.get('state'));
  const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
  await transport.finishAuth(callback);
  assert.match(provider.saved?.access_token ?? '', /^mcp_at_/);
  assert.equal(provider.saved?.scope, 'mcp:read mcp:write');

  const client = new Client({ name: 'claude-test', version: '1' }, MODERN);
  await client.connect(transport);
  t.after(() => client.close());
  assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
  const me = answerOf(await client.callTool({ name: 'getMe', arguments: {} }));
  assert.equal(me.isError, false);
  assert.equal(me.body.organization.id, workspaceA);
  const created = answerOf(
    await client.callTool({ name: 'createTask', arguments: { body: { title: 'Review access rights' } } }),
  );
  assert.equal(created.isError, false, JSON.stringify(created.body));

  // The audit trail names the client and the person it acts for.
  const events = answerOf(
    await client.callTool({ name: 'listAuditEvents', arguments: { action: 'task.created' } }),
  );
  assert.equal(events.body.data[0].actor.label, 'Claude via MCP, on behalf of owner@example.com');
  assert.ok(events.body.data[0].actor.user_id);
  const connected = answerOf(
    await client.callTool({ name: 'listAuditEvents', arguments: { action: 'mcp_client.connected' } }),
  );
  assert.equal(connected.body.data[0].actor.label, 'owner@example.com');
  assert.equal(connected.body.data[0].target.label, 'Claude');

  // Access tokens live ten minutes; the client refreshes, and the refresh token rotates.
  const firstRefresh = provider.saved?.refresh_token;
  fixture.app.runtime.clock.advance(11 * MINUTE_MS);
  assert.equal(answerOf(await client.callTool({ name: 'getMe', arguments: {} })).isError, false);
  assert.notEqual(provider.saved?.refresh_token, firstRefresh);

  // Integrations lists the client; disconnecting it stops it at once.
  await page.goto(`${baseUrl}/w/${workspaceA}/integrations/clients`);
  const row = page.locator('tr', { hasText: 'Claude' });
  assert.match((await row.textContent()) ?? '', /owner@example\.com[\s\S]*Read and write/);
  await assertAccessible(page);
  await Promise.all([
    page.waitForURL(/notice=revoked/),
    row.locator('button', { hasText: 'Disconnect' }).click(),
  ]);
  assert.match((await page.textContent('main')) ?? '', /No clients connected/);
  await assert.rejects(client.callTool({ name: 'getMe', arguments: {} }));
});

test('dynamic registration with the 1.x client, read-only consent, tenancy, PKCE and refresh token reuse', async (t) => {
  const fixture = await startMcpFixture(t);
  const { baseUrl, mcpUrl, workspaceA, workspaceB } = fixture;
  const redirectUrl = 'http://127.0.0.1:9/callback';
  const provider = new TestProvider({ redirectUrl, name: 'Legacy agent', scope: 'mcp:read' });
  const first = new LegacyTransport(mcpUrl, { authProvider: provider });
  await assert.rejects(new LegacyClient({ name: 'legacy', version: '1' }).connect(first));
  assert.match(provider.info?.client_id ?? '', /^mcpc_/, 'registered dynamically');
  const authorizationUrl = provider.authorizationUrl;
  assert.ok(authorizationUrl);

  // Denying answers access_denied with the state and the issuer.
  const denied = await consentOverHttp(fixture, authorizationUrl, {
    workspaceId: workspaceB,
    access: 'read',
    decision: 'deny',
  });
  assert.equal(denied.get('error'), 'access_denied');
  assert.equal(denied.get('iss'), baseUrl);
  assert.equal(denied.get('state'), authorizationUrl.searchParams.get('state'));

  const answer = await consentOverHttp(fixture, authorizationUrl, {
    workspaceId: workspaceB,
    access: 'read',
  });
  const code = answer.get('code') ?? '';
  // A wrong verifier does not get tokens, and spends the code.
  const token = (body: Record<string, string>) =>
    fetch(`${baseUrl}/oauth/token`, { method: 'POST', body: new URLSearchParams(body) }).then(
      async (response) => ({
        status: response.status,
        body: await readJson(response),
      }),
    );
  const wrong = await token({
    grant_type: 'authorization_code',
    code,
    code_verifier: 'x'.repeat(43),
    redirect_uri: redirectUrl,
    client_id: provider.info?.client_id ?? '',
  });
  assert.equal(wrong.status, 400);
  assert.equal(wrong.body.error, 'invalid_grant');

  const again = await consentOverHttp(fixture, authorizationUrl, { workspaceId: workspaceB, access: 'read' });
  const transport = new LegacyTransport(mcpUrl, { authProvider: provider });
  await transport.finishAuth(again.get('code') ?? '');
  assert.equal(provider.saved?.scope, 'mcp:read');
  const client = new LegacyClient({ name: 'legacy', version: '1' });
  await client.connect(transport);
  t.after(() => client.close());
  assert.equal(transport.protocolVersion, '2025-11-25');

  const me = answerOf(await client.callTool({ name: 'getMe', arguments: {} }));
  assert.equal(me.body.organization.id, workspaceB);
  // Read-only consent refuses writes with an error the agent can act on.
  const write = answerOf(
    await client.callTool({ name: 'createTask', arguments: { body: { title: 'Not allowed' } } }),
  );
  assert.equal(write.isError, true);
  assert.equal(write.body.code, 'insufficient_scope');
  assert.equal(write.body.status, 403);

  // Tenancy: a token for workspace B never sees A's records.
  const keyA = await createApiKey(
    fixture.app.runtime.database.db,
    fixture.app.runtime.clock,
    { workspaceId: workspaceA, name: 'A' },
    OPERATOR_SOURCE,
  );
  assert.ok(keyA.ok);
  const taskA = await fetch(`${baseUrl}/api/v1/tasks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keyA.value.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ title: 'Secret of A' }),
  }).then(readJson);
  const seen = answerOf(await client.callTool({ name: 'getTask', arguments: { id: taskA.id } }));
  assert.equal(seen.isError, true);
  assert.equal(seen.body.code, 'not_found');
  const listed = answerOf(await client.callTool({ name: 'listTasks', arguments: {} }));
  assert.deepEqual(listed.body.data, []);

  // Refresh rotates; presenting a spent refresh token ends the grant, new tokens included.
  const clientId = provider.info?.client_id ?? '';
  const spent = provider.saved?.refresh_token ?? '';
  const rotated = await token({ grant_type: 'refresh_token', refresh_token: spent, client_id: clientId });
  assert.equal(rotated.status, 200);
  assert.notEqual(rotated.body.refresh_token, spent);
  const reused = await token({ grant_type: 'refresh_token', refresh_token: spent, client_id: clientId });
  assert.equal(reused.body.error, 'invalid_grant');
  const afterReuse = await token({
    grant_type: 'refresh_token',
    refresh_token: rotated.body.refresh_token,
    client_id: clientId,
  });
  assert.equal(afterReuse.body.error, 'invalid_grant');
  const withRotated = await fetch(mcpUrl, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${rotated.body.access_token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify(INITIALIZE),
  });
  assert.equal(withRotated.status, 401);
  assert.match(withRotated.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
});

test('the authorization server refuses what it cannot honour', async (t) => {
  const fixture = await startMcpFixture(t);
  const { baseUrl } = fixture;
  const register = (body: unknown) =>
    fetch(`${baseUrl}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(async (response) => ({ status: response.status, body: await readJson(response) }));
  assert.equal(
    (await register({ redirect_uris: ['javascript:alert(1)'] })).body.error,
    'invalid_redirect_uri',
  );
  assert.equal(
    (await register({ redirect_uris: ['http://evil.example/cb'] })).body.error,
    'invalid_redirect_uri',
  );
  assert.equal((await register({ redirect_uris: [] })).body.error, 'invalid_redirect_uri');
  assert.equal(
    (
      await register({
        redirect_uris: ['https://app.example/cb'],
        token_endpoint_auth_method: 'client_secret_basic',
      })
    ).body.error,
    'invalid_client_metadata',
  );
  assert.equal((await register('not an object')).status, 400);
  const registered = await register({
    client_name: 'Cursor',
    redirect_uris: ['cursor://anysphere.cursor-mcp/oauth/callback'],
  });
  assert.equal(registered.status, 201);
  assert.equal(registered.body.token_endpoint_auth_method, 'none');

  // An unknown client or redirect URI is shown to the person, never redirected to.
  const authorize = (params: Record<string, string>) =>
    fixture.owner.get(`/oauth/authorize?${new URLSearchParams(params)}`);
  const unknownClient = await authorize({ client_id: 'mcpc_nope', response_type: 'code' });
  assert.equal(unknownClient.status, 400);
  assert.equal(unknownClient.location, undefined);
  const badRedirect = await authorize({
    client_id: registered.body.client_id,
    redirect_uri: 'https://evil.example/cb',
    response_type: 'code',
  });
  assert.equal(badRedirect.status, 400);
  // Without PKCE the client is told so at its redirect URI.
  const noPkce = await authorize({
    client_id: registered.body.client_id,
    redirect_uri: 'cursor://anysphere.cursor-mcp/oauth/callback',
    response_type: 'code',
    state: 's1',
  });
  assert.equal(noPkce.status, 303);
  const location = new URL(noPkce.location ?? '');
  assert.equal(location.protocol, 'cursor:');
  assert.equal(location.searchParams.get('error'), 'invalid_request');
  assert.equal(location.searchParams.get('state'), 's1');
  assert.equal(location.searchParams.get('iss'), baseUrl);

  const token = await fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'password', client_id: registered.body.client_id }),
  });
  assert.equal(token.status, 400);
  assert.equal((await readJson(token)).error, 'unsupported_grant_type');
  const garbage = await fetch(`${baseUrl}/mcp`, {
    method: 'POST',
    headers: { authorization: 'Bearer mcp_at_forged' },
  });
  assert.equal(garbage.status, 401);
});

test('expired codes and tokens are swept; a grant stays listed until it is disconnected', async (t) => {
  const fixture = await startMcpFixture(t);
  const { baseUrl, mcpUrl, workspaceA } = fixture;
  const provider = new TestProvider({ redirectUrl: 'http://127.0.0.1:9/callback', name: 'Sweeper' });
  await assert.rejects(
    new LegacyClient({ name: 'sweeper', version: '1' }).connect(
      new LegacyTransport(mcpUrl, { authProvider: provider }),
    ),
  );
  assert.ok(provider.authorizationUrl);
  const answer = await consentOverHttp(fixture, provider.authorizationUrl, {
    workspaceId: workspaceA,
    access: 'write',
  });
  const exchanged = await fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: answer.get('code') ?? '',
      code_verifier: provider.verifier,
      redirect_uri: 'http://127.0.0.1:9/callback',
      client_id: provider.info?.client_id ?? '',
    }),
  });
  assert.equal(exchanged.status, 200);
  const db = fixture.app.runtime.database.db;
  const count = async (table: 'oauth_codes' | 'oauth_tokens') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  assert.equal(await count('oauth_tokens'), 2);
  assert.equal(await count('oauth_codes'), 1);
  fixture.app.runtime.clock.advance(REFRESH_TOKEN_TTL_MS + MINUTE_MS);
  await sweepOAuthData({ db, clock: fixture.app.runtime.clock });
  assert.equal(await count('oauth_tokens'), 0);
  assert.equal(await count('oauth_codes'), 0);
  assert.deepEqual(
    (await listConnectedClients(db, workspaceA)).map((client) => client.clientName),
    ['Sweeper'],
  );
});
