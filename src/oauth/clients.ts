import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { isStorableText } from '../shared/text.ts';
import { fetchPublicDocument } from '../webhooks/index.ts';
import { CLIENT_METADATA_TTL_MS, type OAuthDeps } from './context.ts';
import type { OAuthClientsTable } from './oauth.table.ts';

/** A client as the authorization server knows it. */
export interface OAuthClient {
  ref: string;
  clientId: string;
  kind: OAuthClientsTable['kind'];
  name: string;
  clientUri: string | null;
  redirectUris: string[];
}

export interface ClientError {
  code: 'invalid_client' | 'invalid_client_metadata' | 'invalid_redirect_uri';
  message: string;
}

const NAME_MAX = 100;
const URI_MAX = 2000;
const REDIRECT_URIS_MAX = 10;
/** Client ID Metadata Documents are small; the draft suggests at most 5 KB. */
const METADATA_DOCUMENT_MAX_BYTES = 5 * 1024;
const METADATA_FETCH_TIMEOUT_MS = 5_000;
const FORBIDDEN_SCHEMES = new Set(['javascript:', 'data:', 'file:', 'vbscript:', 'about:', 'blob:', 'ftp:']);
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

function toClient(row: OAuthClientsTable): OAuthClient {
  return {
    ref: row.id,
    clientId: row.client_id,
    kind: row.kind,
    name: row.name,
    clientUri: row.client_uri,
    redirectUris: JSON.parse(row.redirect_uris) as string[],
  };
}

/**
 * A redirect URI a client may register: https, http on a loopback host (native apps, RFC 8252), or
 * a private-use scheme such as `cursor://`; never a fragment or a scheme a browser would run.
 */
function redirectUriProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > URI_MAX || !isStorableText(value))
    return 'each redirect URI must be a URL of at most 2000 characters';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `${value} is not an absolute URL`;
  }
  if (url.hash !== '') return `${value} must not have a fragment`;
  if (FORBIDDEN_SCHEMES.has(url.protocol)) return `${value} uses a scheme that cannot receive a code`;
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname))
    return `${value} must use https (http only on a loopback host)`;
  return undefined;
}

/** A client's display name: storable text without control characters, bounded. */
function cleanName(value: unknown, fallback: string): string {
  if (typeof value !== 'string') return fallback;
  const name = value.replace(/[\p{Cc}\p{Cf}]/gu, '').trim();
  return name === '' || !isStorableText(name) ? fallback : name.slice(0, NAME_MAX);
}

function optionalUri(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > URI_MAX) return null;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}

interface ClientMetadata {
  name: string;
  clientUri: string | null;
  redirectUris: string[];
}

/**
 * The parts of RFC 7591 client metadata this server uses. Every client is public (PKCE, no
 * secret): a client asking for another token endpoint authentication method is refused.
 */
function readMetadata(body: unknown, fallbackName: string): Result<ClientMetadata, ClientError> {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return err({ code: 'invalid_client_metadata', message: 'the client metadata must be a JSON object' });
  const metadata = body as Record<string, unknown>;
  const uris = metadata.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > REDIRECT_URIS_MAX)
    return err({
      code: 'invalid_redirect_uri',
      message: `redirect_uris must list 1 to ${REDIRECT_URIS_MAX} URIs`,
    });
  for (const uri of uris) {
    const problem = redirectUriProblem(uri);
    if (problem) return err({ code: 'invalid_redirect_uri', message: problem });
  }
  const method = metadata.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none')
    return err({
      code: 'invalid_client_metadata',
      message: 'token_endpoint_auth_method must be "none": clients are public and use PKCE',
    });
  const grantTypes = metadata.grant_types;
  if (
    grantTypes !== undefined &&
    (!Array.isArray(grantTypes) ||
      !grantTypes.every((type) => type === 'authorization_code' || type === 'refresh_token'))
  )
    return err({
      code: 'invalid_client_metadata',
      message: 'grant_types may name only authorization_code and refresh_token',
    });
  return ok({
    name: cleanName(metadata.client_name, fallbackName),
    clientUri: optionalUri(metadata.client_uri),
    redirectUris: uris as string[],
  });
}

/** Dynamic client registration (RFC 7591): a public client with a `client_id` of ours. */
export async function registerClient(
  deps: OAuthDeps,
  body: unknown,
): Promise<Result<OAuthClient, ClientError>> {
  const metadata = readMetadata(body, 'MCP client');
  if (!metadata.ok) return metadata;
  const now = deps.clock.now();
  const row: OAuthClientsTable = {
    id: newId('ocl', now),
    client_id: newId('mcpc', now),
    kind: 'registered',
    name: metadata.value.name,
    client_uri: metadata.value.clientUri,
    redirect_uris: JSON.stringify(metadata.value.redirectUris),
    created_at: now.getTime(),
    refreshed_at: now.getTime(),
  };
  await deps.db.insertInto('oauth_clients').values(row).execute();
  return ok(toClient(row));
}

/** A `client_id` that names a Client ID Metadata Document: an https URL with a path (http on loopback in development). */
function isMetadataDocumentId(clientId: string, allowLoopback: boolean): boolean {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return false;
  }
  if (url.pathname === '/' || url.hash !== '' || url.username !== '' || url.password !== '') return false;
  return url.protocol === 'https:' || (url.protocol === 'http:' && allowLoopback);
}

/**
 * The client named by `client_id`: a registered one, or the client whose metadata document that URL
 * is (fetched under the webhooks' outbound rules, kept a day). Unknown or unreadable: `invalid_client`.
 */
export async function resolveClient(
  deps: OAuthDeps,
  clientId: string,
): Promise<Result<OAuthClient, ClientError>> {
  if (clientId.length === 0 || clientId.length > URI_MAX || !isStorableText(clientId))
    return err({ code: 'invalid_client', message: 'client_id is not valid' });
  const row = await deps.db
    .selectFrom('oauth_clients')
    .selectAll()
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  const now = deps.clock.now().getTime();
  if (row && (row.kind === 'registered' || now - row.refreshed_at < CLIENT_METADATA_TTL_MS))
    return ok(toClient(row));
  if (!isMetadataDocumentId(clientId, deps.targets.allowLoopback))
    return err({ code: 'invalid_client', message: 'no client is registered with this client_id' });
  const fetched = await fetchPublicDocument(clientId, deps.targets, {
    maxBytes: METADATA_DOCUMENT_MAX_BYTES,
    timeoutMs: METADATA_FETCH_TIMEOUT_MS,
  });
  if (!fetched.ok)
    return err({ code: 'invalid_client', message: `the client metadata document: ${fetched.error.message}` });
  if (fetched.value.status !== 200)
    return err({
      code: 'invalid_client',
      message: `the client metadata document answered HTTP ${fetched.value.status}`,
    });
  let document: unknown;
  try {
    document = JSON.parse(fetched.value.body);
  } catch {
    return err({ code: 'invalid_client', message: 'the client metadata document is not JSON' });
  }
  if ((document as { client_id?: unknown } | null)?.client_id !== clientId)
    return err({
      code: 'invalid_client',
      message: 'the client metadata document must name its own URL as client_id',
    });
  const metadata = readMetadata(document, new URL(clientId).host);
  if (!metadata.ok) return err({ code: 'invalid_client', message: metadata.error.message });
  const values = {
    name: metadata.value.name,
    client_uri: metadata.value.clientUri,
    redirect_uris: JSON.stringify(metadata.value.redirectUris),
    refreshed_at: now,
  };
  if (row) {
    await deps.db.updateTable('oauth_clients').set(values).where('id', '=', row.id).execute();
    return ok(toClient({ ...row, ...values }));
  }
  const inserted: OAuthClientsTable = {
    id: newId('ocl', deps.clock.now()),
    client_id: clientId,
    kind: 'metadata_document',
    created_at: now,
    ...values,
  };
  await deps.db
    .insertInto('oauth_clients')
    .values(inserted)
    .onConflict((oc) => oc.column('client_id').doUpdateSet(values))
    .execute();
  const stored = await deps.db
    .selectFrom('oauth_clients')
    .selectAll()
    .where('client_id', '=', clientId)
    .executeTakeFirstOrThrow();
  return ok(toClient(stored));
}

/**
 * Whether `uri` is one the client registered: exactly, except that for an http loopback URI any
 * port is accepted (RFC 8252 section 7.3: native apps listen on an ephemeral port).
 */
export function allowsRedirect(client: OAuthClient, uri: string): boolean {
  if (client.redirectUris.includes(uri)) return true;
  let asked: URL;
  try {
    asked = new URL(uri);
  } catch {
    return false;
  }
  if (asked.protocol !== 'http:' || !LOOPBACK_HOSTS.has(asked.hostname)) return false;
  return client.redirectUris.some((registered) => {
    const known = new URL(registered);
    return (
      known.protocol === 'http:' &&
      known.hostname === asked.hostname &&
      known.pathname === asked.pathname &&
      known.search === asked.search
    );
  });
}
