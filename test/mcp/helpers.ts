import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import type {
  CallToolResult,
  OAuthClientMetadata,
  OAuthClientProvider,
  OAuthDiscoveryState,
  StoredOAuthClientInformation,
  StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import type { FastifyInstance } from 'fastify';
import { type AppFixture, startAppFixture, type WebClient, webClient } from '../helpers/web.ts';

const TLS_DIR = path.join(import.meta.dirname, '..', 'fixtures', 'tls');
const CERT = readFileSync(path.join(TLS_DIR, 'client-example.crt'), 'utf8');
const KEY = readFileSync(path.join(TLS_DIR, 'client-example.key'), 'utf8');

/** The host of the test's OAuth client; the service resolves it to loopback. */
export const CLIENT_HOST = 'client.example';
export const PASSWORD = 'correct horse battery staple';

/** An MCP client's own little site: its metadata document (https) and its redirect URI (loopback http). */
export interface ClientSite {
  metadataUrl: string;
  redirectUrl: string;
  /** The query of each request the redirect URI received, in order. */
  callbacks: URLSearchParams[];
}

async function listen(server: http.Server | https.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/**
 * Serves a Client ID Metadata Document over https (the certificate for `client.example` trusted
 * by this process) and a loopback redirect URI that remembers what it receives.
 */
export async function startClientSite(t: TestContext, clientName: string): Promise<ClientSite> {
  setDefaultCACertificates([...getCACertificates('default'), CERT]);
  const callbacks: URLSearchParams[] = [];
  const callback = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname === '/callback') callbacks.push(url.searchParams);
    response
      .writeHead(200, { 'content-type': 'text/html' })
      .end('<!doctype html><title>Connected</title><p>You can close this window.');
  });
  const callbackPort = await listen(callback);
  const redirectUrl = `http://127.0.0.1:${callbackPort}/callback`;
  let metadataUrl = '';
  const site = https.createServer({ cert: CERT, key: KEY }, (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        client_id: metadataUrl,
        client_name: clientName,
        client_uri: `https://${CLIENT_HOST}/`,
        redirect_uris: [redirectUrl],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }),
    );
  });
  const sitePort = await listen(site);
  metadataUrl = `https://${CLIENT_HOST}:${sitePort}/oauth/client.json`;
  t.after(() => {
    callback.closeAllConnections();
    site.closeAllConnections();
    callback.close();
    site.close();
  });
  return { metadataUrl, redirectUrl, callbacks };
}

/** An OAuth client provider that keeps everything in memory and hands the authorization URL to the test. */
export class TestProvider implements OAuthClientProvider {
  info: StoredOAuthClientInformation | undefined;
  saved: StoredOAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  readonly clientMetadataUrl?: string;
  readonly #redirectUrl: string;
  readonly #name: string;
  readonly #scope: string | undefined;

  constructor(options: { redirectUrl: string; name: string; clientMetadataUrl?: string; scope?: string }) {
    this.#redirectUrl = options.redirectUrl;
    this.#name = options.name;
    this.#scope = options.scope;
    if (options.clientMetadataUrl) this.clientMetadataUrl = options.clientMetadataUrl;
  }
  get redirectUrl() {
    return this.#redirectUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.#name,
      redirect_uris: [this.#redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...(this.#scope ? { scope: this.#scope } : {}),
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: StoredOAuthClientInformation) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: StoredOAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  discovery: OAuthDiscoveryState | undefined;
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery') {
    if (scope === 'all' || scope === 'tokens') this.saved = undefined;
    if (scope === 'all' || scope === 'client') this.info = undefined;
  }
}

export interface McpFixture {
  app: AppFixture;
  baseUrl: string;
  mcpUrl: URL;
  /** The owner of both workspaces, signed in (through `inject`). */
  owner: WebClient;
  workspaceA: string;
  workspaceB: string;
}

/** The service on loopback with two workspaces owned by one person, `client.example` resolving to loopback. */
export async function startMcpFixture(t: TestContext, env: Record<string, string> = {}): Promise<McpFixture> {
  const app = await startAppFixture(t, {
    listen: true,
    env: { WEBHOOK_ALLOW_LOOPBACK: 'true', ...env },
    webhooks: {
      resolveHost: async (host) => {
        assert.equal(host, CLIENT_HOST, `the service looked up ${host}`);
        return ['127.0.0.1'];
      },
    },
  });
  const a = await app.provision({ email: 'owner@example.com', name: 'Workspace A' });
  const owner = webClient(app.runtime.app as FastifyInstance, new URL(app.baseUrl).origin);
  const b = await app.provision({ email: 'owner@example.com', name: 'Workspace B' });
  for (const path of [a.invitationPath, b.invitationPath]) {
    await owner.get(path);
    const accepted = await owner.post(`${path}/accept`, { password: PASSWORD });
    assert.equal(accepted.status, 303, accepted.body);
  }
  return {
    app,
    baseUrl: app.baseUrl,
    mcpUrl: new URL(`${app.baseUrl}/mcp`),
    owner,
    workspaceA: a.workspaceId,
    workspaceB: b.workspaceId,
  };
}

/**
 * Consents through the pages as the signed-in owner (HTTP, not a browser): answers the query the
 * client's redirect URI receives.
 */
export async function consentOverHttp(
  fixture: McpFixture,
  authorizationUrl: URL,
  choice: { workspaceId: string; access: 'read' | 'write'; decision?: 'allow' | 'deny' },
): Promise<URLSearchParams> {
  const page = await fixture.owner.get(`${authorizationUrl.pathname}${authorizationUrl.search}`);
  assert.equal(page.status, 200, page.body);
  const fields: Record<string, string> = {};
  for (const [, name, value] of page.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    if (name && name !== '_csrf') fields[name] = decodeEntities(value ?? '');
  }
  const answered = await fixture.owner.post('/oauth/authorize', {
    ...fields,
    workspace_id: choice.workspaceId,
    access: choice.access,
    decision: choice.decision ?? 'allow',
  });
  assert.equal(answered.status, 303, answered.body);
  return new URL(answered.location ?? '').searchParams;
}

function decodeEntities(value: string): string {
  return value
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** The JSON a tool answered (its text content), and whether it is an error. */
// biome-ignore lint/suspicious/noExplicitAny: tool answers of every shape
export function answerOf(result: unknown): { isError: boolean; body: any } {
  const call = result as CallToolResult;
  const text = call.content.find((item) => item.type === 'text');
  const body = text && text.type === 'text' && text.text !== 'Done.' ? JSON.parse(text.text) : undefined;
  return { isError: call.isError === true, body };
}

// biome-ignore lint/suspicious/noExplicitAny: JSON answers of every shape
export type Json = any;

/** A response's JSON body. */
export async function readJson(response: Response): Promise<Json> {
  return response.json();
}
