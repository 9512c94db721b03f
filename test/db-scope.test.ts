// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { declaredScope, reasonsForBoth, testFiles } from '../scripts/db-scope.ts';

describe('each test file declares where CI runs it (scripts/db-scope.ts)', () => {
  it('the first line of every test file is its marker, `// db-scope: both` or `// db-scope: sqlite`', () => {
    const unmarked = testFiles().filter((file) => declaredScope(file) === undefined);
    assert.deepEqual(unmarked, [], 'add the marker with `npx node scripts/db-scope.ts mark`');
  });

  it('a file naming a feature that can behave differently on another database is `both`', () => {
    const misplaced = testFiles()
      .filter((file) => declaredScope(file) === 'sqlite')
      .map((file) => ({ file, reasons: reasonsForBoth(file) }))
      .filter(({ reasons }) => reasons.length > 0)
      .map(({ file, reasons }) => `${file}: ${reasons.join(', ')}`);
    assert.deepEqual(misplaced, []);
  });
});
