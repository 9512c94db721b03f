/**
 * The `UCP-Agent` request header: an RFC 8941 Dictionary such as
 * `profile="https://agent.example/.well-known/ucp"; version="2026-08-25"`. Only what the version
 * check needs is read; the profile itself is never fetched.
 */

type BareItem =
  | { kind: 'string' | 'token' | 'bytes'; value: string }
  | { kind: 'number'; value: number }
  | { kind: 'boolean'; value: boolean };

interface Member {
  /** An inner list carries no single value; it is kept only to be skipped. */
  item: BareItem | { kind: 'inner_list' };
  params: Map<string, BareItem>;
}

const KEY_START = /[a-z*]/;
const KEY_CHAR = /[a-z0-9_\-.*]/;
const TOKEN_START = /[A-Za-z*]/;
const TOKEN_CHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z:/]/;
const NUMBER = /^-?(?:\d{1,12}\.\d{1,3}|\d{1,15})(?![\d.])/;
const BYTES = /^:([A-Za-z0-9+/=]*):/;

class ParseError extends Error {}

/** A cursor over the header text; every method consumes what it parsed or throws ParseError. */
class Cursor {
  #text: string;
  #at = 0;

  constructor(text: string) {
    this.#text = text;
  }

  get done(): boolean {
    return this.#at >= this.#text.length;
  }

  peek(): string {
    return this.#text[this.#at] ?? '';
  }

  take(char: string): boolean {
    if (this.peek() !== char) return false;
    this.#at++;
    return true;
  }

  skip(pattern: RegExp): void {
    while (!this.done && pattern.test(this.peek())) this.#at++;
  }

  key(): string {
    if (!KEY_START.test(this.peek())) throw new ParseError('key');
    const start = this.#at;
    this.skip(KEY_CHAR);
    return this.#text.slice(start, this.#at);
  }

  bareItem(): BareItem {
    const next = this.peek();
    if (next === '"') return { kind: 'string', value: this.#string() };
    if (next === '?') return { kind: 'boolean', value: this.#boolean() };
    if (next === ':') return { kind: 'bytes', value: this.#expect(BYTES)[1] ?? '' };
    if (next === '-' || /\d/.test(next)) return { kind: 'number', value: Number(this.#expect(NUMBER)[0]) };
    if (TOKEN_START.test(next)) return { kind: 'token', value: this.#token() };
    throw new ParseError('item');
  }

  params(): Map<string, BareItem> {
    const params = new Map<string, BareItem>();
    while (this.take(';')) {
      this.skip(/ /);
      const name = this.key();
      params.set(name, this.take('=') ? this.bareItem() : { kind: 'boolean', value: true });
    }
    return params;
  }

  innerList(): void {
    this.take('(');
    for (;;) {
      this.skip(/ /);
      if (this.take(')')) return;
      this.bareItem();
      this.params();
      if (this.peek() !== ' ' && this.peek() !== ')') throw new ParseError('inner list');
    }
  }

  #string(): string {
    this.take('"');
    let value = '';
    for (;;) {
      const char = this.peek();
      if (char === '') throw new ParseError('unterminated string');
      this.#at++;
      if (char === '"') return value;
      if (char === '\\') {
        const escaped = this.peek();
        if (escaped !== '"' && escaped !== '\\') throw new ParseError('escape');
        this.#at++;
        value += escaped;
      } else if (char < ' ' || char > '~') {
        throw new ParseError('string character');
      } else {
        value += char;
      }
    }
  }

  #token(): string {
    const start = this.#at;
    this.#at++;
    this.skip(TOKEN_CHAR);
    return this.#text.slice(start, this.#at);
  }

  #boolean(): boolean {
    const found = this.#expect(/^\?[01]/);
    return found[0] === '?1';
  }

  #expect(pattern: RegExp): RegExpExecArray {
    const found = pattern.exec(this.#text.slice(this.#at));
    if (!found) throw new ParseError(String(pattern));
    this.#at += found[0].length;
    return found;
  }
}

/** RFC 8941 §4.2.2; undefined when the text is not a valid Dictionary. */
export function parseDictionary(text: string): Map<string, Member> | undefined {
  const cursor = new Cursor(text.trim());
  const members = new Map<string, Member>();
  try {
    while (!cursor.done) {
      const name = cursor.key();
      let item: Member['item'] = { kind: 'boolean', value: true };
      if (cursor.take('=')) {
        if (cursor.peek() === '(') {
          cursor.innerList();
          item = { kind: 'inner_list' };
        } else {
          item = cursor.bareItem();
        }
      }
      members.set(name, { item, params: cursor.params() });
      cursor.skip(/[ \t]/);
      if (cursor.done) break;
      if (!cursor.take(',')) throw new ParseError('separator');
      cursor.skip(/[ \t]/);
      if (cursor.done) throw new ParseError('trailing comma');
    }
  } catch (error) {
    if (error instanceof ParseError) return undefined;
    throw error;
  }
  return members;
}

export type AgentVersion = { kind: 'none' } | { kind: 'requested'; version: string } | { kind: 'malformed' };

function textOf(item: Member['item'] | undefined): string | undefined {
  if (item === undefined || item.kind === 'inner_list') return undefined;
  return String(item.value);
}

/**
 * The protocol version an agent asks for: the `version` parameter of its `profile` member (what
 * the reference implementations send) or a `version` member of its own.
 */
export function requestedVersion(header: string | undefined): AgentVersion {
  if (header === undefined || header.trim() === '') return { kind: 'none' };
  const members = parseDictionary(header);
  if (!members) return { kind: 'malformed' };
  const version =
    textOf(members.get('profile')?.params.get('version')) ?? textOf(members.get('version')?.item);
  return version === undefined ? { kind: 'none' } : { kind: 'requested', version };
}
