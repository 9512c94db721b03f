// db-scope: sqlite

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');

/**
 * Tables a module other than their owner may name, each with the reason. Keep this empty unless a
 * statement truly cannot go through the owner's functions.
 */
const EXCEPTIONS: readonly { module: string; table: string; reason: string }[] = [];

/** Kysely builder calls that name a table as their first argument (`'t'`, `'t as x'`, `['t', 'u']`). */
const BUILDER_CALL =
  /\.(?:selectFrom|updateTable|insertInto|replaceInto|deleteFrom|mergeInto|(?:inner|left|right|full|cross)Join(?:Lateral)?|table)\(\s*(\[[^\]]*\]|'[^']*'|"[^"]*")/g;
/** SQL written by hand: a `sql` template's text, and the tables its clauses name. */
const SQL_TEMPLATE = /\bsql(?:<[^`>]*>)?`([^`]*)`/g;
const SQL_TABLE = /\b(?:from|join|update|into|table)\s+"?([a-z_][a-z0-9_]*)"?/gi;

function filesUnder(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) return entry.name === 'migrations' ? [] : filesUnder(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** A file's module, as the import rules count them: `workspace`, `channels/acp`, or `cli-commands.ts`. */
function moduleOf(file: string): string {
  const parts = path.relative(SRC, file).split(path.sep);
  if (parts[0] === 'channels' && parts.length > 2) return `channels/${parts[1]}`;
  return parts[0] as string;
}

const FILES = filesUnder(SRC);
const TEXT = new Map(FILES.map((file) => [file, readFileSync(file, 'utf8')]));

const TABLE_FILES = FILES.filter((file) => file.endsWith('.table.ts'));

/**
 * Each table and its owner: the module whose `*.table.ts` declares the row interface a table name
 * is given (`workspaces: WorkspacesTable`, where the database type is assembled: in `db/` or in
 * the table files themselves).
 */
function tableOwners(): Map<string, string> {
  const interfaceOwner = new Map<string, string>();
  for (const file of TABLE_FILES) {
    for (const [, name] of (TEXT.get(file) as string).matchAll(/export interface (\w+)/g)) {
      interfaceOwner.set(name as string, moduleOf(file));
    }
  }
  const owners = new Map<string, string>();
  const assembling = [...FILES.filter((file) => moduleOf(file) === 'db'), ...TABLE_FILES];
  for (const text of assembling.map((file) => TEXT.get(file) as string)) {
    for (const [, table, row] of text.matchAll(/^\s*([a-z_][a-z0-9_]*)\s*:\s*(\w+)\s*;\s*$/gm)) {
      const owner = interfaceOwner.get(row as string);
      if (owner) owners.set(table as string, owner);
    }
  }
  return owners;
}

/** Every table name a source text gives a query, by builder call or in hand-written SQL. */
function tablesNamedIn(text: string): string[] {
  const names: string[] = [];
  for (const [, argument] of text.matchAll(BUILDER_CALL)) {
    for (const [, literal] of (argument as string).matchAll(/['"]([^'"]*)['"]/g)) {
      names.push((literal as string).trim().split(/\s+/)[0] as string);
    }
  }
  for (const [, body] of text.matchAll(SQL_TEMPLATE)) {
    for (const [, table] of (body as string).matchAll(SQL_TABLE)) names.push((table as string).toLowerCase());
  }
  return names;
}

/** Each place where a module names a table another module owns. */
function foreignTables(owners: Map<string, string>): string[] {
  const found = new Set<string>();
  for (const file of FILES) {
    const module = moduleOf(file);
    for (const table of tablesNamedIn(TEXT.get(file) as string)) {
      const owner = owners.get(table);
      if (owner === undefined || owner === module) continue;
      if (EXCEPTIONS.some((e) => e.module === module && e.table === table)) continue;
      found.add(`${path.relative(SRC, file)} names ${table} (owned by ${owner})`);
    }
  }
  return [...found].sort();
}

describe('each table is read and written only by the module that declares it', () => {
  const owners = tableOwners();

  it('finds the owner of every table the migrations create', async () => {
    const database = openDatabase({ kind: 'sqlite', file: ':memory:' });
    try {
      await migrateToLatest(database.db);
      const tables = await database.db.introspection.getTables();
      const unowned = tables.map((table) => table.name).filter((name) => !owners.has(name));
      assert.deepEqual(unowned, [], 'tables no *.table.ts declares');
    } finally {
      await database.close();
    }
    assert.equal(owners.get('workspaces'), 'workspace');
    assert.equal(owners.get('users'), 'accounts');
    assert.equal(owners.get('mpp_challenge_claims'), 'channels/mpp');
  });

  it('sees the tables of builder calls, joins and hand-written SQL', () => {
    const text = [
      "trx.updateTable('workspaces').set((eb) => ({ id: eb.ref('id') }))",
      "db.selectFrom(['api_keys as key', 'orders']).innerJoin('users', 'users.id', 'key.created_by_user_id')",
      "eb.exists(eb.selectFrom('evidence').select('id')).leftJoin(\"tasks as t\", 't.id', 'x')",
      'sql`(select users.email from users where users.id = member.user_id) join people on true`',
    ].join('\n');
    assert.deepEqual(tablesNamedIn(text), [
      'workspaces',
      'api_keys',
      'orders',
      'users',
      'evidence',
      'tasks',
      'users',
      'people',
    ]);
  });

  it('no module names a table another module owns', () => {
    assert.deepEqual(foreignTables(owners), []);
  });
});
