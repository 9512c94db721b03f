// db-scope: sqlite

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCANNED_FOLDERS = ['src', 'test', 'bench'];
/** A quoted relative path: `'../x/y.json'`, `"./z"`, `` `../w` ``. */
const RELATIVE_PATH_LITERAL = /(['"`])(\.{1,2}\/[^'"`\s]*)\1/g;

function sourceFilesUnder(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) return sourceFilesUnder(full);
    return /\.(ts|js|mjs)$/.test(entry.name) ? [full] : [];
  });
}

const insideRepository = (target: string) => !path.relative(REPO_ROOT, target).startsWith('..');

/**
 * The paths a file names that lead out of the repository: resolved from the file's own folder
 * (imports, `new URL(..., import.meta.url)`), or resolved from the repository root (a
 * `path.resolve(ROOT, '../sibling/...')`) onto something that exists beside the clone.
 */
function pathsLeavingRepository(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(RELATIVE_PATH_LITERAL)]
    .map((match) => match[2] as string)
    .filter((literal) => {
      if (!insideRepository(path.resolve(path.dirname(file), literal))) return true;
      const fromRoot = path.resolve(REPO_ROOT, literal);
      const namesSomething = literal.split('/').some((segment) => segment !== '.' && segment !== '..');
      return namesSomething && !insideRepository(fromRoot) && existsSync(fromRoot);
    });
}

describe('the repository stands alone', () => {
  it('no source, test or bench file reads anything outside the repository (such as ../shared)', () => {
    const offenders = SCANNED_FOLDERS.flatMap((folder) =>
      sourceFilesUnder(path.join(REPO_ROOT, folder)),
    ).flatMap((file) =>
      pathsLeavingRepository(file).map((literal) => `${path.relative(REPO_ROOT, file)}: ${literal}`),
    );
    assert.deepEqual(offenders, []);
  });

  it('the protocol schemas the tests validate against are vendored', () => {
    for (const schema of [
      'vendor/protocol-schemas/acp-2026-04-17/schema.agentic_checkout.json',
      'vendor/protocol-schemas/ucp-2026-08-25/schemas/shopping/checkout.json',
      'vendor/protocol-schemas/README.md',
      'vendor/protocol-schemas/NOTICE',
    ]) {
      assert.ok(existsSync(path.join(REPO_ROOT, schema)), `${schema} is missing`);
    }
  });
});
