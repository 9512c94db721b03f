import { createHash } from 'node:crypto';
import { type AuditSource, recordAuditEvent } from '../audit/index.ts';
import type { PlanId } from '../catalog/index.ts';
import type { Db, Tx } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { constantTimeEqual, newId, newSecret, sha256Hex } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { canManageWorkspace, findMembership, findWorkspacePlan } from '../workspace/index.ts';
import { allowsRedirect, type OAuthClient, resolveClient } from './clients.ts';
import {
  ACCESS_TOKEN_TTL_MS,
  CODE_TTL_MS,
  mcpResourceOf,
  type OAuthDeps,
  READ_SCOPE,
  REFRESH_TOKEN_TTL_MS,
  WRITE_SCOPE,
} from './context.ts';
import type { OAuthGrantsTable } from './oauth.table.ts';

export type Access = OAuthGrantsTable['access'];

/** The parameters of an authorization request (RFC 6749 4.1.1 with PKCE and RFC 8707). */
export interface AuthorizationParams {
  response_type?: string;
  client_id?: string;
  redirect_uri?: string;
  code_challenge?: string;
  code_challenge_method?: string;
  state?: string;
  scope?: string;
  resource?: string;
}

export interface AuthorizationRequest {
  client: OAuthClient;
  redirectUri: string;
  codeChallenge: string;
  state: string | undefined;
  resource: string;
  /** What the client asked for: write access unless its scope names only `mcp:read`. */
  requestedAccess: Access;
  /** The request's parameters, as the consent form carries them back. */
  params: Required<Pick<AuthorizationParams, 'client_id' | 'redirect_uri' | 'code_challenge'>> &
    AuthorizationParams;
}

/**
 * Why an authorization request cannot go on. `show`: the client or its redirect URI is not known,
 * so nothing may be sent to that URI and the person is told on the page; `redirect`: an OAuth error
 * for the client, sent to its redirect URI.
 */
export type AuthorizationRefusal =
  | { to: 'show'; message: string }
  | { to: 'redirect'; redirectUri: string; error: string; description: string; state: string | undefined };

const CHALLENGE_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const VERIFIER_PATTERN = /^[A-Za-z0-9._~-]{43,128}$/;
const STATE_MAX = 500;

/** Checks an authorization request, in the order RFC 6749 4.1.2.1 asks (client and redirect URI first). */
export async function checkAuthorizationRequest(
  deps: OAuthDeps,
  params: AuthorizationParams,
): Promise<Result<AuthorizationRequest, AuthorizationRefusal>> {
  if (!params.client_id) return err({ to: 'show', message: 'The request names no client (client_id).' });
  const client = await resolveClient(deps, params.client_id);
  if (!client.ok) return err({ to: 'show', message: `The client is not known: ${client.error.message}.` });
  const redirectUri =
    params.redirect_uri ??
    (client.value.redirectUris.length === 1 ? client.value.redirectUris[0] : undefined);
  if (!redirectUri || !allowsRedirect(client.value, redirectUri))
    return err({ to: 'show', message: 'The redirect URI is not one the client registered.' });
  const state = params.state;
  const refuse = (error: string, description: string) =>
    err<AuthorizationRefusal>({ to: 'redirect', redirectUri, error, description, state });
  if (state !== undefined && state.length > STATE_MAX) return refuse('invalid_request', 'state is too long');
  if (params.response_type !== 'code')
    return refuse('unsupported_response_type', 'only response_type=code is supported');
  if (params.code_challenge_method !== 'S256' || !CHALLENGE_PATTERN.test(params.code_challenge ?? ''))
    return refuse('invalid_request', 'PKCE is required: code_challenge with code_challenge_method=S256');
  const resource = params.resource ?? mcpResourceOf(deps.config.baseUrl);
  if (resource !== mcpResourceOf(deps.config.baseUrl))
    return refuse('invalid_target', `the only resource is ${mcpResourceOf(deps.config.baseUrl)}`);
  const scopes = (params.scope ?? '').split(' ').filter((scope) => scope !== '');
  if (scopes.some((scope) => scope !== READ_SCOPE && scope !== WRITE_SCOPE))
    return refuse('invalid_scope', `the scopes are ${READ_SCOPE} and ${WRITE_SCOPE}`);
  return ok({
    client: client.value,
    redirectUri,
    codeChallenge: params.code_challenge as string,
    state,
    resource,
    requestedAccess: scopes.length > 0 && !scopes.includes(WRITE_SCOPE) ? 'read' : 'write',
    params: {
      ...params,
      client_id: params.client_id,
      redirect_uri: redirectUri,
      code_challenge: params.code_challenge as string,
    },
  });
}

/** Where the browser goes with the answer: the redirect URI with `code` or `error`, `state` and `iss` (RFC 9207). */
export function authorizationResponseUrl(
  redirectUri: string,
  issuer: string,
  answer: Record<string, string | undefined>,
): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(answer))
    if (value !== undefined) url.searchParams.set(name, value);
  url.searchParams.set('iss', issuer);
  return url.href;
}

export interface ConsentInput {
  request: AuthorizationRequest;
  user: { id: string; email: string };
  workspaceId: string;
  access: Access;
}

/**
 * The person allowed the client: a grant for the workspace (owners and admins only, as for API
 * keys) and a single-use code, recorded in the audit log; answers the code.
 */
export async function grantConsent(
  deps: OAuthDeps,
  input: ConsentInput,
  source: AuditSource,
): Promise<Result<{ code: string; grantId: string }, { code: 'not_allowed' }>> {
  const membership = await findMembership(deps.db, input.workspaceId, input.user.id);
  if (!membership || !canManageWorkspace(membership.role)) return err({ code: 'not_allowed' as const });
  const now = deps.clock.now();
  const code = newSecret('mcp_ac_');
  const grantId = newId('ogr', now);
  await inTransaction(deps.db, async (trx) => {
    await trx
      .insertInto('oauth_grants')
      .values({
        id: grantId,
        client_ref: input.request.client.ref,
        workspace_id: input.workspaceId,
        user_id: input.user.id,
        user_email: input.user.email,
        access: input.access,
        created_at: now.getTime(),
        last_used_at: null,
        revoked_at: null,
      })
      .execute();
    await trx
      .insertInto('oauth_codes')
      .values({
        code_hash: sha256Hex(code),
        grant_id: grantId,
        redirect_uri: input.request.redirectUri,
        code_challenge: input.request.codeChallenge,
        resource: input.request.resource,
        expires_at: now.getTime() + CODE_TTL_MS,
        used_at: null,
      })
      .execute();
    await recordAuditEvent(trx, {
      workspaceId: input.workspaceId,
      action: 'mcp_client.connected',
      target: { type: 'mcp_client', id: grantId, label: input.request.client.name },
      changes: { access: { from: null, to: input.access === 'read' ? 'read only' : 'read and write' } },
      ...source,
      at: now,
    });
  });
  return ok({ code, grantId });
}

/** RFC 6749 5.2 error codes the token endpoint answers. */
export interface TokenError {
  error: 'invalid_request' | 'invalid_grant' | 'invalid_client' | 'unsupported_grant_type' | 'invalid_target';
  description: string;
}

export interface TokenSet {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

const tokenError = (error: TokenError['error'], description: string) =>
  err<TokenError>({ error, description });

function scopeOf(access: Access): string {
  return access === 'write' ? `${READ_SCOPE} ${WRITE_SCOPE}` : READ_SCOPE;
}

async function issueTokens(
  trx: Tx,
  deps: OAuthDeps,
  grantId: string,
  access: Access,
  resource: string,
): Promise<TokenSet> {
  const now = deps.clock.now();
  const accessToken = newSecret('mcp_at_');
  const refreshToken = newSecret('mcp_rt_');
  await trx
    .insertInto('oauth_tokens')
    .values([
      {
        id: newId('otk', now),
        grant_id: grantId,
        kind: 'access',
        token_hash: sha256Hex(accessToken),
        resource,
        created_at: now.getTime(),
        expires_at: now.getTime() + ACCESS_TOKEN_TTL_MS,
        used_at: null,
      },
      {
        id: newId('otk', now),
        grant_id: grantId,
        kind: 'refresh',
        token_hash: sha256Hex(refreshToken),
        resource,
        created_at: now.getTime(),
        expires_at: now.getTime() + REFRESH_TOKEN_TTL_MS,
        used_at: null,
      },
    ])
    .execute();
  return {
    access_token: accessToken,
    token_type: 'Bearer',
    expires_in: Math.floor(ACCESS_TOKEN_TTL_MS / 1000),
    refresh_token: refreshToken,
    scope: scopeOf(access),
  };
}

/** Ends a grant and every token of it, in the caller's transaction. */
async function endGrant(trx: Tx, grantId: string, at: number): Promise<boolean> {
  const ended = await trx
    .updateTable('oauth_grants')
    .set({ revoked_at: at })
    .where('id', '=', grantId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  await trx.deleteFrom('oauth_tokens').where('grant_id', '=', grantId).execute();
  return ended.numUpdatedRows > 0n;
}

function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/** The token request's fields, as posted (form-encoded). */
export type TokenRequest = Record<string, string | undefined>;

/** The token endpoint: `authorization_code` (with PKCE) and `refresh_token` (rotated, reuse ends the grant). */
export async function exchangeToken(
  deps: OAuthDeps,
  body: TokenRequest,
): Promise<Result<TokenSet, TokenError>> {
  const clientId = body.client_id;
  if (!clientId) return tokenError('invalid_client', 'client_id is required (clients are public)');
  const resource = body.resource;
  if (resource !== undefined && resource !== mcpResourceOf(deps.config.baseUrl))
    return tokenError('invalid_target', `the only resource is ${mcpResourceOf(deps.config.baseUrl)}`);
  if (body.grant_type === 'authorization_code') return exchangeCode(deps, clientId, body);
  if (body.grant_type === 'refresh_token') return refresh(deps, clientId, body);
  return tokenError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
}

async function grantOfClient(db: Db, grantId: string) {
  return db
    .selectFrom('oauth_grants')
    .innerJoin('oauth_clients', 'oauth_clients.id', 'oauth_grants.client_ref')
    .select(['oauth_grants.id', 'oauth_grants.access', 'oauth_grants.revoked_at', 'oauth_clients.client_id'])
    .where('oauth_grants.id', '=', grantId)
    .executeTakeFirst();
}

async function exchangeCode(
  deps: OAuthDeps,
  clientId: string,
  body: TokenRequest,
): Promise<Result<TokenSet, TokenError>> {
  const { code, code_verifier: verifier, redirect_uri: redirectUri } = body;
  if (!code || !verifier || !redirectUri)
    return tokenError('invalid_request', 'code, code_verifier and redirect_uri are required');
  if (!VERIFIER_PATTERN.test(verifier)) return tokenError('invalid_request', 'code_verifier is not valid');
  const now = deps.clock.now().getTime();
  return inTransaction(deps.db, async (trx) => {
    const claimed = await trx
      .updateTable('oauth_codes')
      .set({ used_at: now })
      .where('code_hash', '=', sha256Hex(code))
      .where('used_at', 'is', null)
      .returningAll()
      .executeTakeFirst();
    if (!claimed) {
      // A code presented twice may have been stolen: the grant it made ends (RFC 6749 4.1.2).
      const used = await trx
        .selectFrom('oauth_codes')
        .select('grant_id')
        .where('code_hash', '=', sha256Hex(code))
        .executeTakeFirst();
      if (used) await endGrant(trx, used.grant_id, now);
      return tokenError('invalid_grant', 'the code is not valid, or was used already');
    }
    const grant = await grantOfClient(trx, claimed.grant_id);
    if (!grant || grant.revoked_at !== null || claimed.expires_at <= now)
      return tokenError('invalid_grant', 'the code has expired or its grant was revoked');
    if (grant.client_id !== clientId)
      return tokenError('invalid_grant', 'the code was issued to another client');
    if (claimed.redirect_uri !== redirectUri)
      return tokenError('invalid_grant', 'redirect_uri differs from the authorization request');
    if (!constantTimeEqual(s256(verifier), claimed.code_challenge))
      return tokenError('invalid_grant', 'code_verifier does not match the code_challenge');
    return ok(await issueTokens(trx, deps, grant.id, grant.access, claimed.resource));
  });
}

async function refresh(
  deps: OAuthDeps,
  clientId: string,
  body: TokenRequest,
): Promise<Result<TokenSet, TokenError>> {
  const presented = body.refresh_token;
  if (!presented) return tokenError('invalid_request', 'refresh_token is required');
  const now = deps.clock.now().getTime();
  const hash = sha256Hex(presented);
  return inTransaction(deps.db, async (trx) => {
    const claimed = await trx
      .updateTable('oauth_tokens')
      .set({ used_at: now })
      .where('token_hash', '=', hash)
      .where('kind', '=', 'refresh')
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning(['grant_id', 'resource'])
      .executeTakeFirst();
    if (!claimed) {
      const reused = await trx
        .selectFrom('oauth_tokens')
        .select(['grant_id', 'used_at'])
        .where('token_hash', '=', hash)
        .where('kind', '=', 'refresh')
        .executeTakeFirst();
      // A rotated refresh token presented again: someone holds a copy, so the grant ends.
      if (reused?.used_at != null) await endGrant(trx, reused.grant_id, now);
      return tokenError('invalid_grant', 'the refresh token is not valid, expired or was used already');
    }
    const grant = await grantOfClient(trx, claimed.grant_id);
    if (!grant || grant.revoked_at !== null) return tokenError('invalid_grant', 'the grant was revoked');
    if (grant.client_id !== clientId)
      return tokenError('invalid_grant', 'the token was issued to another client');
    await trx
      .deleteFrom('oauth_tokens')
      .where('grant_id', '=', grant.id)
      .where('kind', '=', 'access')
      .where('expires_at', '<=', now)
      .execute();
    return ok(await issueTokens(trx, deps, grant.id, grant.access, claimed.resource));
  });
}

/**
 * RFC 7009 revocation by the client: a refresh token ends its grant, an access token only itself.
 * Unknown tokens, or another client's, change nothing (the endpoint answers 200 either way).
 */
export async function revokeToken(
  deps: OAuthDeps,
  clientId: string | undefined,
  token: string,
): Promise<void> {
  const now = deps.clock.now().getTime();
  await inTransaction(deps.db, async (trx) => {
    const row = await trx
      .selectFrom('oauth_tokens')
      .select(['id', 'grant_id', 'kind'])
      .where('token_hash', '=', sha256Hex(token))
      .executeTakeFirst();
    if (!row) return;
    const grant = await grantOfClient(trx, row.grant_id);
    if (!grant || (clientId !== undefined && grant.client_id !== clientId)) return;
    if (row.kind === 'refresh') await endGrant(trx, row.grant_id, now);
    else await trx.deleteFrom('oauth_tokens').where('id', '=', row.id).execute();
  });
}

/** Who an access token acts for, checked against the database on every request. */
export interface OAuthPrincipal {
  grantId: string;
  workspaceId: string;
  plan: PlanId;
  access: Access;
  clientName: string;
  userId: string;
  userEmail: string;
}

export type AccessTokenError = 'invalid' | 'expired' | 'wrong_resource';

const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * The grant behind an access token for `resource`: not expired, not revoked, and the person who
 * consented still manages the workspace. Nothing is cached, so a revocation stops the client at
 * its next request on every instance.
 */
export async function verifyAccessToken(
  deps: Pick<OAuthDeps, 'db' | 'clock'>,
  token: string,
  resource: string,
): Promise<Result<OAuthPrincipal, AccessTokenError>> {
  const now = deps.clock.now().getTime();
  const row = await deps.db
    .selectFrom('oauth_tokens')
    .innerJoin('oauth_grants', 'oauth_grants.id', 'oauth_tokens.grant_id')
    .innerJoin('oauth_clients', 'oauth_clients.id', 'oauth_grants.client_ref')
    .select([
      'oauth_tokens.expires_at',
      'oauth_tokens.resource',
      'oauth_grants.id as grant_id',
      'oauth_grants.workspace_id',
      'oauth_grants.access',
      'oauth_grants.user_id',
      'oauth_grants.user_email',
      'oauth_grants.revoked_at',
      'oauth_grants.last_used_at',
      'oauth_clients.name as client_name',
    ])
    .where('oauth_tokens.token_hash', '=', sha256Hex(token))
    .where('oauth_tokens.kind', '=', 'access')
    .executeTakeFirst();
  const plan = row && (await findWorkspacePlan(deps.db, row.workspace_id));
  if (!row || !plan || row.revoked_at !== null) return err('invalid');
  if (row.expires_at <= now) return err('expired');
  if (row.resource !== resource) return err('wrong_resource');
  const membership = await findMembership(deps.db, row.workspace_id, row.user_id);
  if (!membership || !canManageWorkspace(membership.role)) return err('invalid');
  if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_RESOLUTION_MS) {
    await deps.db
      .updateTable('oauth_grants')
      .set({ last_used_at: now })
      .where('id', '=', row.grant_id)
      .execute();
  }
  return ok({
    grantId: row.grant_id,
    workspaceId: row.workspace_id,
    plan,
    access: row.access,
    clientName: row.client_name,
    userId: row.user_id,
    userEmail: row.user_email,
  });
}

/** A connected client as Integrations lists it. */
export interface ConnectedClient {
  grantId: string;
  clientName: string;
  clientId: string;
  clientUri: string | null;
  userEmail: string;
  access: Access;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** The workspace's clients that may act now (grants not revoked), oldest first. */
export async function listConnectedClients(db: Db, workspaceId: string): Promise<ConnectedClient[]> {
  const rows = await db
    .selectFrom('oauth_grants')
    .innerJoin('oauth_clients', 'oauth_clients.id', 'oauth_grants.client_ref')
    .select([
      'oauth_grants.id',
      'oauth_grants.user_email',
      'oauth_grants.access',
      'oauth_grants.created_at',
      'oauth_grants.last_used_at',
      'oauth_clients.name',
      'oauth_clients.client_id',
      'oauth_clients.client_uri',
    ])
    .where('oauth_grants.workspace_id', '=', workspaceId)
    .where('oauth_grants.revoked_at', 'is', null)
    .orderBy('oauth_grants.id')
    .execute();
  return rows.map((row) => ({
    grantId: row.id,
    clientName: row.name,
    clientId: row.client_id,
    clientUri: row.client_uri,
    userEmail: row.user_email,
    access: row.access,
    createdAt: new Date(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : new Date(row.last_used_at),
  }));
}

/** Disconnects a client from the workspace at once: the grant and all its tokens end. */
export async function revokeConnectedClient(
  deps: Pick<OAuthDeps, 'db' | 'clock'>,
  input: { workspaceId: string; grantId: string },
  source: AuditSource,
): Promise<boolean> {
  const now = deps.clock.now();
  return inTransaction(deps.db, async (trx) => {
    const grant = await trx
      .selectFrom('oauth_grants')
      .innerJoin('oauth_clients', 'oauth_clients.id', 'oauth_grants.client_ref')
      .select(['oauth_grants.id', 'oauth_clients.name'])
      .where('oauth_grants.id', '=', input.grantId)
      .where('oauth_grants.workspace_id', '=', input.workspaceId)
      .where('oauth_grants.revoked_at', 'is', null)
      .executeTakeFirst();
    if (!grant) return false;
    await endGrant(trx, grant.id, now.getTime());
    await recordAuditEvent(trx, {
      workspaceId: input.workspaceId,
      action: 'mcp_client.revoked',
      target: { type: 'mcp_client', id: grant.id, label: grant.name },
      ...source,
      at: now,
    });
    return true;
  });
}

/** Deletes what can never be used again: expired codes and tokens, and ended grants' leftovers. */
export async function sweepOAuthData(deps: Pick<OAuthDeps, 'db' | 'clock'>): Promise<void> {
  const now = deps.clock.now().getTime();
  await deps.db.deleteFrom('oauth_codes').where('expires_at', '<=', now).execute();
  await deps.db.deleteFrom('oauth_tokens').where('expires_at', '<=', now).execute();
}
