// db-scope: sqlite

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const CHECKOUT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/checkout');
/** Issue 28: checkout takes at most five names from purchase (it imported 14 before). */
const MAX_PURCHASE_NAMES = 5;
/** An import or re-export statement from purchase/: its clause and where from. */
const FROM_PURCHASE =
  /^\s*(?:import|export)\s+(?:type\s+)?([^;]*?)\s+from\s+['"](\.\.\/purchase\/[^'"]*)['"]/gm;

/**
 * The names one import or export clause takes: `a`, `{ a, type B, c as d }`, `a, { b }`. A whole
 * module (`* as p`, `export *`) counts as more than allowed.
 */
function namesOf(clause: string): string[] {
  if (clause.includes('*')) return Array.from({ length: MAX_PURCHASE_NAMES + 1 }, () => clause.trim());
  const braced = /\{([^}]*)\}/.exec(clause);
  const named = (braced?.[1] ?? '')
    .split(',')
    .map(
      (part) =>
        part
          .trim()
          .replace(/^type\s+/, '')
          .split(/\s+as\s+/)[0] ?? '',
    )
    .filter(Boolean);
  const defaultName = clause
    .replace(/^\s*type\s+/, '')
    .replace(/\{[^}]*\}/, '')
    .replace(/,/g, '')
    .trim();
  return defaultName ? [defaultName, ...named] : named;
}

function purchaseNamesIn(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(FROM_PURCHASE)].flatMap((match) =>
    namesOf(match[1] ?? '').map((name) => `${path.basename(file)}: ${name}`),
  );
}

describe('the seam between checkout and purchase', () => {
  it('reads every kind of import clause', () => {
    assert.deepEqual(namesOf('{ a, type B,\n  c as d }'), ['a', 'B', 'c']);
    assert.deepEqual(namesOf('type { A }'), ['A']);
    assert.deepEqual(namesOf('x, { y }'), ['x', 'y']);
    assert.equal(namesOf('* as purchase').length, MAX_PURCHASE_NAMES + 1);
  });

  it(`checkout imports at most ${MAX_PURCHASE_NAMES} names from purchase, types included`, () => {
    const files = readdirSync(CHECKOUT, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts'))
      .map((name) => path.join(CHECKOUT, name));
    assert.ok(files.length > 0, `no files under ${CHECKOUT}`);
    const names = files.flatMap(purchaseNamesIn);
    assert.ok(names.length > 0, 'checkout imports nothing from purchase: is the pattern still right?');
    assert.ok(
      names.length <= MAX_PURCHASE_NAMES,
      `checkout imports ${names.length} names from purchase (at most ${MAX_PURCHASE_NAMES}):\n${names.join('\n')}`,
    );
  });
});
