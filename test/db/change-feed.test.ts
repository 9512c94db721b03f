// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SQLITE_OUTSIDE_WRITES_MS, SqliteChangeFeed } from '../../src/db/changes.ts';

describe("SQLite's change feed", () => {
  it('serves nothing from memory while the file version cannot be read, and asks again at once', () => {
    // What `pragma data_version` answers, in order; undefined: another process holds a lock.
    const answers: (number | undefined)[] = [1, undefined, undefined, 2];
    let now = 0;
    const feed = new SqliteChangeFeed(
      () => answers.shift(),
      () => now,
    );
    const first = feed.version();
    assert.equal(typeof first, 'number');
    now += SQLITE_OUTSIDE_WRITES_MS;
    assert.equal(feed.version(), undefined);
    assert.equal(feed.version(), undefined, 'a version that could not be read is asked for again');
    const moved = feed.version();
    assert.notEqual(moved, first, 'another process committed meanwhile: what was kept is not served');
    assert.equal(feed.version(), moved, 'within the bound the file is not asked again');
    assert.deepEqual(answers, []);
  });

  it('moves the version at the first read when the file could not be read at the start', () => {
    const answers: (number | undefined)[] = [undefined, 7];
    let now = 0;
    const feed = new SqliteChangeFeed(
      () => answers.shift(),
      () => now,
    );
    const unread = feed.version();
    now += SQLITE_OUTSIDE_WRITES_MS;
    assert.notEqual(feed.version(), unread);
  });
});
