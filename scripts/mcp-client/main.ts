/**
 * `npm run mcp-client -- --base-url <url> (--api-key <svc_live_...> | --email <addr> --password <pw>
 * [--invitation-url <url>] [--access read|write]) [--call <tool>]`
 *
 * An MCP client that is not the service's: the official SDK client (`@modelcontextprotocol/client`)
 * connects to `<base-url>/mcp`, lists the tools and calls one (`getMe` by default). With an API key
 * it sends it as `Authorization: Bearer`; otherwise it goes through OAuth as a person would, over
 * plain HTTP: the SDK discovers the authorization server and registers (RFC 7591), then this script
 * signs in with the address and password (first accepting the invitation at --invitation-url, which
 * sets the password), consents on the page for the first workspace listed, and hands the code back
 * to the SDK. Exits 1 when anything fails, 2 on a usage error. Imports nothing of `src/`.
 */
import { parseArgs } from 'node:util';
import {
  Client,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from '@modelcontextprotocol/client';

/** The 2.x client negotiates the 2026-07-28 protocol when the server offers it (its default is the 2025 handshake). */
const MODERN = { versionNegotiation: { mode: 'auto' as const } };

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

const USAGE =
  'usage: npm run mcp-client -- --base-url <url> (--api-key <key> | --email <addr> --password <pw> [--invitation-url <url>] [--access read|write]) [--call <tool>]';
/** Never opened: the script reads the code from the consent page's redirect instead of receiving it. */
const REDIRECT_URL = 'http://127.0.0.1:1/callback';

/** A browser's part, over fetch: cookies, redirects read by hand, the forms' tokens. */
class Browser {
  readonly #cookies = new Map<string, string>();
  readonly #origin: string;
  constructor(origin: string) {
    this.#origin = origin;
  }

  async request(
    url: string,
    form?: Record<string, string>,
  ): Promise<{ status: number; location: string; body: string }> {
    const response = await fetch(new URL(url, this.#origin), {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        accept: 'text/html',
        cookie: [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(form ? { origin: this.#origin, 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(form ? { body: new URLSearchParams(form).toString() } : {}),
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair = ''] = cookie.split(';');
      const at = pair.indexOf('=');
      if (/max-age=0/i.test(cookie)) this.#cookies.delete(pair.slice(0, at));
      else this.#cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    return {
      status: response.status,
      location: response.headers.get('location') ?? '',
      body: await response.text(),
    };
  }
}

function hiddenFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    if (name) fields[name] = decode(value ?? '');
  }
  return fields;
}

function decode(value: string): string {
  return value
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** Keeps the client's registration, tokens and PKCE verifier in memory for one run. */
class MemoryProvider implements OAuthClientProvider {
  info: StoredOAuthClientInformation | undefined;
  saved: StoredOAuthTokens | undefined;
  verifier = '';
  discovery: OAuthDiscoveryState | undefined;
  authorizationUrl: URL | undefined;
  get redirectUrl() {
    return REDIRECT_URL;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'mcp-client (CI)',
      redirect_uris: [REDIRECT_URL],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
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
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
}

interface Options {
  baseUrl: string;
  apiKey?: string;
  email?: string;
  password?: string;
  invitationUrl?: string;
  access: 'read' | 'write';
  call: string;
}

/** Signs in (after accepting the invitation, when given) and consents; answers the redirect's query. */
async function consent(options: Options, authorizationUrl: URL, io: Io): Promise<URLSearchParams> {
  const browser = new Browser(options.baseUrl);
  const password = options.password ?? '';
  if (options.invitationUrl) {
    const invitation = await browser.request(options.invitationUrl);
    const accepted = await browser.request(`${new URL(options.invitationUrl).pathname}/accept`, {
      ...hiddenFields(invitation.body),
      password,
    });
    if (accepted.status !== 303) throw new Error(`accepting the invitation answered ${accepted.status}`);
    io.out('accepted the invitation');
  } else {
    const page = await browser.request('/sign-in');
    const signedIn = await browser.request('/sign-in', {
      ...hiddenFields(page.body),
      email: options.email ?? '',
      password,
    });
    if (signedIn.status !== 303) throw new Error(`signing in answered ${signedIn.status}`);
    io.out(`signed in as ${options.email}`);
  }
  const page = await browser.request(`${authorizationUrl.pathname}${authorizationUrl.search}`);
  if (page.status !== 200) throw new Error(`the consent page answered ${page.status}`);
  const workspace = /name="workspace_id" value="([^"]+)"/.exec(page.body)?.[1];
  if (!workspace) throw new Error('the consent page lists no workspace this account manages');
  const answered = await browser.request('/oauth/authorize', {
    ...hiddenFields(page.body),
    workspace_id: workspace,
    access: options.access,
    decision: 'allow',
  });
  if (answered.status !== 303 || !answered.location.startsWith(REDIRECT_URL))
    throw new Error(`the consent answered ${answered.status} ${answered.location}`);
  io.out(`consented (${options.access}) for ${workspace}`);
  return new URL(answered.location).searchParams;
}

async function run(options: Options, io: Io): Promise<void> {
  const url = new URL(`${options.baseUrl}/mcp`);
  let transport: StreamableHTTPClientTransport;
  if (options.apiKey) {
    transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { authorization: `Bearer ${options.apiKey}` } },
    });
  } else {
    const provider = new MemoryProvider();
    const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
    try {
      await new Client({ name: 'mcp-client', version: '1' }, MODERN).connect(first);
      throw new Error('the endpoint answered without asking for authorization');
    } catch (error) {
      if (!(error instanceof UnauthorizedError) || !provider.authorizationUrl) throw error;
    }
    io.out(`registered as ${provider.info?.client_id}; authorizing at ${provider.authorizationUrl.origin}`);
    const callback = await consent(options, provider.authorizationUrl, io);
    transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await transport.finishAuth(callback);
    io.out(`got an access token (${provider.saved?.scope})`);
  }
  const client = new Client({ name: 'mcp-client', version: '1' }, MODERN);
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    io.out(`${tools.length} tools: ${tools.map((tool) => tool.name).join(' ')}`);
    if (tools.length === 0) throw new Error('the server lists no tools');
    const result = await client.callTool({ name: options.call, arguments: {} });
    const text = result.content.find((item) => item.type === 'text');
    if (result.isError) throw new Error(`${options.call} failed: ${text?.type === 'text' ? text.text : ''}`);
    io.out(`${options.call}: ${text?.type === 'text' ? text.text.replace(/\s+/g, ' ').slice(0, 200) : 'ok'}`);
  } finally {
    await client.close();
  }
}

function parse(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      'base-url': { type: 'string' },
      'api-key': { type: 'string' },
      email: { type: 'string' },
      password: { type: 'string' },
      'invitation-url': { type: 'string' },
      access: { type: 'string' },
      call: { type: 'string' },
    },
  });
  if (!values['base-url']) throw new Error('--base-url is required');
  if (!values['api-key'] && !values.password) throw new Error('give --api-key, or --email and --password');
  if (!values['api-key'] && !values.email && !values['invitation-url'])
    throw new Error('OAuth needs --email (or --invitation-url)');
  const access = values.access ?? 'read';
  if (access !== 'read' && access !== 'write') throw new Error('--access must be read or write');
  return {
    baseUrl: values['base-url'].replace(/\/+$/, ''),
    apiKey: values['api-key'],
    email: values.email,
    password: values.password,
    invitationUrl: values['invitation-url'],
    access,
    call: values.call ?? 'getMe',
  };
}

export async function main(argv: string[], io: Io): Promise<number> {
  let options: Options;
  try {
    options = parse(argv);
  } catch (error) {
    io.err(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  try {
    await run(options, io);
    return 0;
  } catch (error) {
    io.err(`mcp-client: ${(error as Error).message}`);
    return 1;
  }
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2), {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  });
}
