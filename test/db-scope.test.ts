// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scopeProblems, testFiles } from '../scripts/db-scope.ts';

describe('each test file declares where CI runs it (scripts/db-scope.ts)', () => {
  it('every test file keeps the rule: a marker, `both` when it names a feature, or a cover that runs on PostgreSQL', () => {
    const broken = testFiles().flatMap((file) => scopeProblems(file).map((problem) => `${file}: ${problem}`));
    assert.deepEqual(broken, [], 'a new file gets its marker from `npx node scripts/db-scope.ts mark`');
  });

  it('catches a file that breaks it', () => {
    const reachingTheDatabase = "import { createTestDatabase } from '../helpers/database.ts';\n";
    const check = (firstLine: string, body: string) =>
      scopeProblems('test/web/example.test.ts', `${firstLine}\n\n${reachingTheDatabase}${body}`);

    assert.match(check('', '')[0] ?? '', /no `\/\/ db-scope: both\|sqlite` marker/);
    assert.match(
      check('// db-scope: sqlite', "it('charges once', () => {});")[0] ?? '',
      /purchases, payments and orders, so it is `both` or names its cover/,
    );
    assert.deepEqual(check('// db-scope: both', "it('charges once', () => {});"), []);
    assert.deepEqual(check('// db-scope: sqlite', "it('renders a heading', () => {});"), []);

    const covered = '// db-scope: sqlite (on postgres: test/web/members.test.ts)';
    assert.deepEqual(check(covered, "it('finds a member by search', () => {});"), []);
    assert.match(check(covered, "it('renders a heading', () => {});")[0] ?? '', /needs a cover/);
    assert.match(
      // Spelled in two parts so that this file does not name it.
      check(covered, `const url = process.env.TEST_DATA${'BASE_URL'};\nit('searches', () => {});`)[0] ?? '',
      /names the test database URL, so it is `both`/,
    );
    assert.match(
      check('// db-scope: sqlite (on postgres: test/web/nothing.test.ts)', "it('searches', () => {});")[0] ??
        '',
      /its cover test\/web\/nothing\.test\.ts is not a test file/,
    );
    assert.match(
      check('// db-scope: sqlite (on postgres: test/db-scope.test.ts)', "it('searches', () => {});")[0] ?? '',
      /its cover test\/db-scope\.test\.ts does not run on PostgreSQL/,
    );
    assert.match(
      check('// db-scope: both (on postgres: test/web/members.test.ts)', '')[0] ?? '',
      /needs no cover/,
    );
  });
});
