import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../db/schema.ts';
import { isUniqueViolation } from '../db/transaction.ts';
import type { Clock } from '../shared/clock.ts';
import { isEmailAddress } from '../shared/email.ts';
import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import type { UsersTable } from './accounts.table.ts';

export interface User {
  id: string;
  email: string;
  hasPassword: boolean;
  createdAt: Date;
}

/** One spelling per address: trimmed and lowercased (no provider treats case as significant in practice). */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function isValidEmail(email: string): boolean {
  return isEmailAddress(email.trim());
}

function toUser(row: UsersTable): User {
  return {
    id: row.id,
    email: row.email,
    hasPassword: row.password_hash !== null,
    createdAt: new Date(row.created_at),
  };
}

export async function findUserByEmail(db: Db, email: string): Promise<User | undefined> {
  const row = await findUserRow(db, email);
  return row ? toUser(row) : undefined;
}

export async function findUserRow(db: Db, email: string): Promise<UsersTable | undefined> {
  return db.selectFrom('users').selectAll().where('email_key', '=', normalizeEmail(email)).executeTakeFirst();
}

export async function findUserById(db: Db, userId: string): Promise<User | undefined> {
  const row = await db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst();
  return row ? toUser(row) : undefined;
}

/** The addresses of several accounts at once (e.g. the creators in a list of keys). */
export async function emailsOfUsers(db: Db, userIds: readonly string[]): Promise<Map<string, string>> {
  if (userIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('users')
    .select(['id', 'email'])
    .where('id', 'in', [...new Set(userIds)])
    .execute();
  return new Map(rows.map((row) => [row.id, row.email]));
}

/**
 * The address an account has now, as an expression for another module's statement: `userIdColumn`
 * is the column holding the account's id (`member.user_id`); null when there is no such account.
 */
export function accountEmailOf(userIdColumn: string): RawBuilder<string | null> {
  return sql<string | null>`(select users.email from users where users.id = ${sql.ref(userIdColumn)})`;
}

/**
 * Creates an account; `email_taken` when one exists for the address (also when a concurrent
 * request created it first: the unique index decides).
 */
export async function createUser(
  db: Db,
  clock: Clock,
  input: { email: string; passwordHash: string | null },
): Promise<Result<User, 'email_taken'>> {
  const now = clock.now().getTime();
  const row: UsersTable = {
    id: newId('user', new Date(now)),
    email: input.email.trim(),
    email_key: normalizeEmail(input.email),
    password_hash: input.passwordHash,
    created_at: now,
    updated_at: now,
  };
  if (await findUserRow(db, row.email)) return err('email_taken');
  try {
    await db.insertInto('users').values(row).execute();
  } catch (error) {
    if (isUniqueViolation(error)) return err('email_taken');
    throw error;
  }
  return ok(toUser(row));
}

export async function setPasswordHash(db: Db, clock: Clock, userId: string, passwordHash: string) {
  await db
    .updateTable('users')
    .set({ password_hash: passwordHash, updated_at: clock.now().getTime() })
    .where('id', '=', userId)
    .execute();
}
