// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCsv } from '../../src/shared/csv-parse.ts';

function fields(text: string): string[][] {
  const parsed = parseCsv(text, 100);
  assert.ok(parsed.ok, JSON.stringify(parsed));
  return parsed.value.map((record) => record.fields);
}

describe('parseCsv', () => {
  it('reads quoted commas, doubled quotes and line breaks inside quotes', () => {
    assert.deepEqual(fields('a,"b, c","say ""hi""","two\r\nlines"\n'), [
      ['a', 'b, c', 'say "hi"', 'two\r\nlines'],
    ]);
  });

  it('takes CRLF, LF and CR line ends, skips a BOM and blank lines, keeps empty fields', () => {
    assert.deepEqual(fields('\uFEFFx,y\r\n1,2\n\n3,\r4,""'), [
      ['x', 'y'],
      ['1', '2'],
      ['3', ''],
      ['4', ''],
    ]);
    assert.deepEqual(fields(''), []);
  });

  it('tells the line each record starts on', () => {
    const parsed = parseCsv('h\n"a\nb"\n\nc\n', 10);
    assert.ok(parsed.ok);
    assert.deepEqual(
      parsed.value.map((record) => record.line),
      [1, 2, 5],
    );
  });

  it('refuses what it would have to guess, naming the line', () => {
    assert.deepEqual(parseCsv('h\n"open', 10), {
      ok: false,
      error: { line: 2, message: 'a quoted field is never closed' },
    });
    assert.deepEqual(parseCsv('h\nab"c', 10), {
      ok: false,
      error: { line: 2, message: 'a quote inside an unquoted field' },
    });
    assert.deepEqual(parseCsv('h\n"a"b', 10), {
      ok: false,
      error: { line: 2, message: 'text follows a closing quote' },
    });
  });

  it('stops past the record limit', () => {
    assert.deepEqual(parseCsv('a\nb\nc\n', 2), { ok: false, error: 'too_many' });
    assert.equal(parseCsv('a\nb\n', 2).ok, true);
  });
});
