import type { Config } from '../config.ts';
import type { Db } from '../db/schema.ts';
import type { Clock } from '../shared/clock.ts';
import { DAY_MS } from '../shared/clock.ts';
import type { TargetPolicy } from '../webhooks/index.ts';

/** What the authorization server is given: the database, the clock, the base URL and the outbound rules. */
export interface OAuthDeps {
  db: Db;
  clock: Clock;
  config: Pick<Config, 'baseUrl'>;
  /** Where a client's metadata document may be fetched from: the webhooks' outbound rules. */
  targets: TargetPolicy;
}

export const ACCESS_TOKEN_TTL_MS = 10 * 60_000;
export const REFRESH_TOKEN_TTL_MS = 30 * DAY_MS;
export const CODE_TTL_MS = 10 * 60_000;
/** A client's metadata document is read again when the copy is older than this. */
export const CLIENT_METADATA_TTL_MS = DAY_MS;

export const READ_SCOPE = 'mcp:read';
export const WRITE_SCOPE = 'mcp:write';

/** The issuer: the service's own origin and base path, without a trailing slash. */
export function issuerOf(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '');
}

/** The one protected resource (RFC 8707 / RFC 9728): the MCP endpoint. */
export function mcpResourceOf(baseUrl: string): string {
  return `${issuerOf(baseUrl)}/mcp`;
}
