import { err, ok, type Result } from './result.ts';

/** A record of a CSV file and the line it starts on (1-based, the header being line 1). */
export interface CsvRecord {
  line: number;
  fields: string[];
}

export interface CsvSyntaxError {
  line: number;
  message: string;
}

/**
 * Parses RFC 4180 CSV: comma-separated fields, double-quoted fields holding commas, line breaks and
 * doubled quotes (`""`), records ended by CRLF, LF or CR, a leading UTF-8 byte order mark ignored,
 * blank lines skipped. A quote inside an unquoted field, text after a closing quote, or a quote
 * never closed is an error naming its line, never a guess. Stops with an error past `maxRecords`.
 */
export function parseCsv(text: string, maxRecords: number): Result<CsvRecord[], CsvSyntaxError | 'too_many'> {
  const records: CsvRecord[] = [];
  let position = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  while (position < text.length) {
    const start = line;
    const fields: string[] = [];
    let ended = false;
    while (!ended) {
      let field = '';
      if (text[position] === '"') {
        position++;
        for (;;) {
          if (position >= text.length) return err({ line: start, message: 'a quoted field is never closed' });
          const ch = text[position] as string;
          if (ch === '"') {
            if (text[position + 1] === '"') {
              field += '"';
              position += 2;
              continue;
            }
            position++;
            break;
          }
          if (ch === '\n' || (ch === '\r' && text[position + 1] !== '\n')) line++;
          field += ch;
          position++;
        }
        const next = text[position];
        if (next !== undefined && next !== ',' && next !== '\r' && next !== '\n') {
          return err({ line, message: 'text follows a closing quote' });
        }
      } else {
        while (position < text.length && !',\r\n'.includes(text[position] as string)) {
          if (text[position] === '"') return err({ line, message: 'a quote inside an unquoted field' });
          field += text[position];
          position++;
        }
      }
      fields.push(field);
      const separator = text[position];
      position++;
      if (separator === ',') continue;
      if (separator === '\r' && text[position] === '\n') position++;
      if (separator !== undefined) line++;
      ended = true;
    }
    if (fields.length === 1 && fields[0] === '') continue;
    if (records.length === maxRecords) return err('too_many');
    records.push({ line: start, fields });
  }
  return ok(records);
}
