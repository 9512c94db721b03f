import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Which test files CI runs a second time on PostgreSQL with Redis. `npm test` runs every file on
 * SQLite; `.ci/run` then runs the files whose first line is `// db-scope: both` on PostgreSQL and
 * Redis. The rule (docs/operations.md, "Tests and CI"): a file that reaches a test database must be
 * `both` when it names any feature whose behaviour can differ by database or needs Redis (FEATURES
 * below), unless its marker names the `both` files that run the same server code on PostgreSQL:
 * `// db-scope: sqlite (on postgres: test/web/members.test.ts)`. That is for a file whose subject is
 * not the database (what Chromium does with pages, a stream's memory). A file that names the test
 * database or Redis itself is always `both`. Every other file may be `sqlite`. When unsure, `both`.
 * test/db-scope.test.ts fails on a file that breaks the rule.
 *
 * Run as a script, `node scripts/db-scope.ts both` (or `sqlite`) prints the test files of that
 * scope, one a line; `node scripts/db-scope.ts mark` gives each file without a marker the one the
 * rule asks for (a new test file, say), as its first line.
 */

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export type DbScope = 'both' | 'sqlite';
export const MARKER = /^\/\/ db-scope: (both|sqlite)(?: \(on postgres: ([^)]+)\))?$/;

/** Names that make a file `both` on their own: it asks which database or Redis it runs on. */
const NAMES_THE_BACKEND: readonly [string, RegExp][] = [
  ['the test database URL', /\bTEST_DATABASE_URL\b|\bDATABASE_URL\b|processDatabaseUrl/],
  ['a branch on the dialect', /testDialect\s*[!=]==|[!=]==\s*testDialect/],
  ['Redis', /redis/i],
];

/** Features whose behaviour can differ between SQLite and PostgreSQL (or Redis and in-process). */
const FEATURES: readonly [string, RegExp][] = [
  ['raw SQL or the query builder', /\bsql`|\bsql\.|\.(selectFrom|insertInto|updateTable|deleteFrom)\(/],
  ['a transaction or a lock', /transaction|\block|forUpdate|serializ|isolation|deadlock/i],
  [
    'a race or concurrent requests',
    /\brac(e|es|ing)\b|concurren|parallel|simultaneous|Promise\.(all|allSettled|race|any)\b|at once/i,
  ],
  ['migrations', /migrat/i],
  [
    'a second handle, instance or process',
    /\breopen\(|shared:\s*true|\.connection\b|instance|\bcluster\b|spawn\(|startService/i,
  ],
  ['the change feed and kept reads', /change.?feed|kept read|read.?cache|notif(y|ied)\b|data_version/i],
  ['jobs, sweeps, holds or deliveries', /\bjobs?\b|sweep|outbox|runDue|deliver|\bholds?\b/i],
  ['rate limits', /rate.?limit|RATE_LIMIT|\b429\b|throttl/i],
  ['idempotency', /idempoten/i],
  [
    'purchases, payments and orders',
    /purchas|checkout|payment|\bcharges?\b|refund|(?<!in )\borders?\b|fulfil|settle/i,
  ],
  ['plan limits and quotas', /quota|plan.?limit|entitlement|\bseats?\b/i],
  ['paging and search', /cursor|starting_after|next_page|search|[?&]q=|case.?insensitive/i],
  ['unique constraints and conflicts', /unique|duplicate|conflict|already (used|taken|in use|held)|\b409\b/i],
  ['backups and restores', /backup|restore/i],
  ['connection loss or failover', /connection.?loss|terminat|failover|restart|\bkill/i],
  ['readiness, which asks the database', /readyz|readiness|unreachable/i],
];

/** Every test file, relative to the repository, sorted. */
export function testFiles(): string[] {
  const walk = (folder: string): string[] =>
    readdirSync(path.join(REPO_ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
      const relative = path.join(folder, entry.name);
      if (entry.isDirectory()) return walk(relative);
      return entry.name.endsWith('.test.ts') ? [relative] : [];
    });
  return walk('test').sort();
}

const IMPORT = /(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g;
const DATABASE_HELPER = path.join(REPO_ROOT, 'test/helpers/database.ts');

const read = (file: string) => readFileSync(path.resolve(REPO_ROOT, file), 'utf8');

/** Whether a file with this text imports test/helpers/database.ts, itself or through other test files. */
function importsTestDatabase(absolute: string, text: string, seen: Set<string>): boolean {
  seen.add(absolute);
  return [...text.matchAll(IMPORT)].some((match) => {
    const imported = path.resolve(path.dirname(absolute), match[1] as string);
    if (imported === DATABASE_HELPER) return true;
    if (seen.has(imported) || !imported.startsWith(path.join(REPO_ROOT, 'test'))) return false;
    return importsTestDatabase(imported, readFileSync(imported, 'utf8'), seen);
  });
}

/** The scope a test file's text declares on its first line, and the files it names as its cover. */
function markerIn(text: string): { scope?: DbScope; covers: string[] } {
  const match = MARKER.exec(text.split('\n', 1)[0] ?? '');
  return { scope: match?.[1] as DbScope | undefined, covers: match?.[2]?.split(', ') ?? [] };
}

/** The scope the file's first line declares, or undefined without a marker. */
export function declaredScope(file: string): DbScope | undefined {
  return markerIn(read(file)).scope;
}

/** What a test file's text names: the backend itself, and the features that can differ by database. */
function namedIn(file: string, text: string): { backend: string[]; features: string[] } {
  const body = text.split('\n').slice(1).join('\n');
  const matching = (patterns: readonly [string, RegExp][]) =>
    patterns.filter(([, pattern]) => pattern.test(body)).map(([reason]) => reason);
  const reaches = importsTestDatabase(path.resolve(REPO_ROOT, file), text, new Set());
  return { backend: matching(NAMES_THE_BACKEND), features: reaches ? matching(FEATURES) : [] };
}

/** Why the file must run on both databases, cover or not; empty when it need not. */
export function reasonsForBoth(file: string): string[] {
  const { backend, features } = namedIn(file, read(file));
  return [...backend, ...features];
}

/**
 * What breaks the rule in a test file (its path relative to the repository, and its text); empty
 * when it keeps it.
 */
export function scopeProblems(file: string, text = read(file)): string[] {
  const { scope, covers } = markerIn(text);
  if (scope === undefined) return ['no `// db-scope: both|sqlite` marker on its first line'];
  if (scope === 'both') return covers.length > 0 ? ['a `both` file needs no cover on PostgreSQL'] : [];
  const { backend, features } = namedIn(file, text);
  if (backend.length > 0) return [`names ${backend.join(', ')}, so it is \`both\``];
  if (covers.length === 0) {
    return features.length > 0 ? [`names ${features.join(', ')}, so it is \`both\` or names its cover`] : [];
  }
  if (features.length === 0) return ['names no feature that needs a cover on PostgreSQL'];
  const files = testFiles();
  return covers.flatMap((cover) => {
    if (!files.includes(cover)) return [`its cover ${cover} is not a test file`];
    const coverText = read(cover);
    const runsOnPostgres =
      markerIn(coverText).scope === 'both' &&
      importsTestDatabase(path.resolve(REPO_ROOT, cover), coverText, new Set());
    return runsOnPostgres ? [] : [`its cover ${cover} does not run on PostgreSQL`];
  });
}

/** Adds the marker the rule asks for to every test file without one; returns the files marked. */
export function markUnmarked(): string[] {
  return testFiles().filter((file) => {
    if (declaredScope(file) !== undefined) return false;
    const scope: DbScope = reasonsForBoth(file).length > 0 ? 'both' : 'sqlite';
    const absolute = path.resolve(REPO_ROOT, file);
    writeFileSync(absolute, `// db-scope: ${scope}\n\n${readFileSync(absolute, 'utf8')}`);
    return true;
  });
}

if (import.meta.main) {
  const command = process.argv[2];
  if (command === 'mark') for (const file of markUnmarked()) console.log(`marked ${file}`);
  else if (command === 'both' || command === 'sqlite') {
    for (const file of testFiles()) if (declaredScope(file) === command) console.log(file);
  } else {
    console.error('usage: node scripts/db-scope.ts both|sqlite|mark');
    process.exit(2);
  }
}
