import { type AuditSource, recordAuditEvent } from '../audit/index.ts';
import type { Db } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import type { Clock } from '../shared/clock.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { isStorableText } from '../shared/text.ts';
import { publishEvent } from '../webhooks/index.ts';
import { lockWorkspace } from './lock.ts';

/** A workspace's name, once trimmed: at least one and at most this many characters. */
export const WORKSPACE_NAME_MAX = 100;

/**
 * What a name may not hold anywhere: C0 and C1 control characters (line breaks, tabs, escapes),
 * text-direction controls (with which "\u202eevil" shows as "live" and one name poses as
 * another), and unpaired surrogates (no UTF-8 form). As a regular-expression character class body.
 */
const REFUSED = '\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069\\ud800-\\udfff';

/**
 * The rule as a JSON Schema pattern (compiled with the `u` flag, so a class matches a whole code
 * point and maxLength-like counts are characters): leading and trailing white space, which the
 * name loses, then 1 to 100 characters that start and end with a visible one. `\s` is exactly
 * what `String#trim` removes. The REST API's schema carries it; `parseWorkspaceName` applies it.
 */
export const WORKSPACE_NAME_PATTERN = `^\\s*[^${REFUSED}\\s](?:[^${REFUSED}]{0,${WORKSPACE_NAME_MAX - 2}}[^${REFUSED}\\s])?\\s*$`;

const refused = new RegExp(`[${REFUSED}]`, 'u');

export type WorkspaceNameError = {
  code: 'invalid_name';
  reason: 'empty' | 'too_long' | 'refused_characters';
};

/** The name to store (trimmed), or why it cannot be one: the same rule as WORKSPACE_NAME_PATTERN. */
export function parseWorkspaceName(raw: string): Result<string, WorkspaceNameError> {
  const name = raw.trim();
  if (name === '') return err({ code: 'invalid_name', reason: 'empty' });
  if (!isStorableText(name) || refused.test(name)) {
    return err({ code: 'invalid_name', reason: 'refused_characters' });
  }
  if ([...name].length > WORKSPACE_NAME_MAX) return err({ code: 'invalid_name', reason: 'too_long' });
  return ok(name);
}

/** Who renames: an account (which must be an owner, checked under the lock), or an API key of the workspace. */
export type Renamer = { kind: 'member'; userId: string } | { kind: 'api_key' };

export type RenameError =
  | WorkspaceNameError
  /** No such workspace, or (for an account) one it is not a member of. */
  | { code: 'not_found' }
  /** The account is a member but not an owner. */
  | { code: 'forbidden' };

export interface Rename {
  workspaceId: string;
  previousName: string;
  name: string;
  /** False when the name was already this: nothing was written, recorded or sent. */
  changed: boolean;
}

/**
 * Renames a workspace: the name is trimmed and checked (parseWorkspaceName); an account must be
 * an owner. In one transaction, under the workspace row's lock: the new name, an audit event
 * naming who and both names, and the `workspace.renamed` webhook event. Every page and the API
 * read the name per request, so it shows everywhere at once.
 */
export async function renameWorkspace(
  db: Db,
  clock: Clock,
  input: { workspaceId: string; name: string; by: Renamer },
  source: AuditSource,
): Promise<Result<Rename, RenameError>> {
  const parsed = parseWorkspaceName(input.name);
  if (!parsed.ok) return parsed;
  const name = parsed.value;
  if (!isStorableText(input.workspaceId) || input.workspaceId.length > 100) {
    return err({ code: 'not_found' });
  }
  return inTransaction(db, async (trx) => {
    // Locked, so two renames follow one another.
    const current = await lockWorkspace(trx, input.workspaceId);
    if (!current) return err({ code: 'not_found' as const });
    if (input.by.kind === 'member') {
      const member = await trx
        .selectFrom('workspace_members')
        .select('role')
        .where('workspace_id', '=', input.workspaceId)
        .where('user_id', '=', input.by.userId)
        .executeTakeFirst();
      if (!member) return err({ code: 'not_found' as const });
      if (member.role !== 'owner') return err({ code: 'forbidden' as const });
    }
    const rename = { workspaceId: input.workspaceId, previousName: current.name, name };
    if (current.name === name) return ok({ ...rename, changed: false });
    const now = clock.now();
    await trx
      .updateTable('workspaces')
      .set({ name, updated_at: now.getTime() })
      .where('id', '=', input.workspaceId)
      .execute();
    await recordAuditEvent(trx, {
      workspaceId: input.workspaceId,
      action: 'workspace.renamed',
      target: { type: 'workspace', id: input.workspaceId, label: `${current.name} → ${name}` },
      ...source,
      at: now,
    });
    await publishEvent(trx, clock, {
      workspaceId: input.workspaceId,
      type: 'workspace.renamed',
      data: { previous_name: current.name, name },
    });
    return ok({ ...rename, changed: true });
  });
}
