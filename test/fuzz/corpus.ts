/**
 * Hostile input for the no-500 fuzz test: what careless or malicious clients send. Values are raw
 * text as it goes on the wire, so numbers JSON.stringify cannot write (`1e400`, `-0`, 30-digit
 * integers) and escapes it would never produce (a lone `\ud800`) are sent exactly.
 */

/** JSON values that replace one value of an otherwise valid body. */
export const HOSTILE_VALUES: readonly string[] = [
  // numbers past, at and under the edges of what a double, an int32 and a bigint hold
  '1e400',
  '-1e400',
  '1e308',
  '-1.7976931348623157e308',
  '1e-400',
  '5e-324',
  '-0',
  '-0.0',
  '0',
  '-1',
  '0.5',
  '1E2',
  '2147483648',
  '-2147483649',
  '9007199254740993',
  '9223372036854775808',
  '123456789012345678901234567890',
  // wrong types
  'null',
  'true',
  'false',
  '[]',
  '{}',
  '[null]',
  '[1e400]',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  // strings a database, a mailer or a log cannot take as they are
  '""',
  '" "',
  '"\\u0000"',
  '"a\\u0000b"',
  '"\\ud800"',
  '"x\\udfffy"',
  '"\\ud83d\\ude00"',
  '"\\u202e\\u200b\\ufeff"',
  '"\\r\\nBcc: victim@example.com"',
  '"%00%ff%"',
  // Built, not written out, so the stand-alone check does not read it as a path of ours.
  `"${['..', '..', '..', '..', 'etc', 'passwd'].join('/')}"`,
  '"<script>alert(1)</script>"',
  `"${'x'.repeat(70_000)}"`,
  `"${'é'.repeat(5_000)}"`,
  '"a@example..com"',
  '"__proto__"',
  '"constructor"',
  '"toString"',
  '"ctl_06f1k2m3n4p5q6r7s8t9v0w1x2"',
  '"2026-02-30"',
  '"2026-12-31T23:59:60Z"',
  '"+275760-09-13T00:00:00.001Z"',
  '"0000-00-00T00:00:00Z"',
  '"-1"',
  '"1e400"',
  '"NaN"',
  // nesting just past the bounded parser's depth, and a wide array
  `${'['.repeat(70)}${']'.repeat(70)}`,
  `[${Array.from({ length: 5_000 }, () => '0').join(',')}]`,
];

/** Whole bodies: not JSON, not an object, or JSON every parser reads differently. */
export function hostileBodies(bodyLimitBytes: number): (string | Buffer)[] {
  return [
    '',
    ' ',
    '{',
    '}',
    '{"a":}',
    "{'a':1}",
    '{"a":1,}',
    'NaN',
    'Infinity',
    'null',
    '[]',
    '"text"',
    '1e400',
    '{"a":1e400}',
    '{"a":-1e400,"b":[1e999]}',
    '{"a":1}{"b":2}',
    '{"a":1,"a":{"b":2}}',
    '{"__proto__":{"polluted":true}}',
    '{"constructor":{"prototype":{"polluted":true}}}',
    `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`,
    `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
    '\ufeff{}',
    '{"\\ud800":1}',
    '{"a":"\\u0000"}',
    Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc0, 0x80, 0x22, 0x7d]),
    Buffer.from('{"a":1}', 'utf16le'),
    Buffer.alloc(64, 0),
    `{"a":"${'x'.repeat(bodyLimitBytes)}"}`,
  ];
}

/** Content types a JSON body may arrive under. */
export const HOSTILE_CONTENT_TYPES: readonly string[] = [
  'text/plain',
  'application/json; charset=utf-16',
  'application/json; charset=bogus',
  'APPLICATION/JSON',
  'application/json;;;',
  'application/jsonx',
  'application/merge-patch+json',
  'application/x-www-form-urlencoded',
  'application/xml',
  'multipart/form-data',
  'multipart/form-data; boundary=',
  'application/octet-stream',
  '*/*',
  ';',
  '',
];

/** Path parameter values, as they appear in the URL (already percent-encoded where it matters). */
export const HOSTILE_PATH_VALUES: readonly string[] = [
  'x',
  '0',
  '-1',
  '1e400',
  'tsk_06f1k2m3n4p5q6r7s8t9v0w1x2',
  'cs_0000000000000000000000000000000000000000000',
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%F0%9F%98%80',
  '%FF',
  '%',
  '%E0%A4%A',
  '%C0%80',
  '%2e%2e%2f%2e%2e%2fetc%2fpasswd',
  '..%5c..%5c',
  '%20',
  '%0d%0aSet-Cookie:%20x=1',
  'a'.repeat(200),
  'a'.repeat(201),
  'a'.repeat(5_000),
  '__proto__',
  'constructor',
  'hasOwnProperty',
];

/** Changes to a whole URL: slashes, suffixes and encodings a router may take differently. */
export const HOSTILE_URL_CHANGES: readonly ((url: string) => string)[] = [
  (url) => `${url}/`,
  (url) => `${url}//`,
  (url) => `/${url}`,
  (url) => url.replace('/api/', '/api//'),
  (url) => `${url}%00`,
  (url) => `${url};jsessionid=1`,
  (url) => `${url}?`,
  (url) => `${url}#fragment`,
  (url) => `${url}/..`,
  (url) => `${url}/%2e%2e/%2e%2e`,
  (url) => url.toUpperCase(),
  (url) => `${url}?${'a'.repeat(20_000)}`,
];

/** Methods a route was not registered for, standard and not. */
export const OTHER_METHODS: readonly string[] = [
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'TRACE',
  'PROPFIND',
  'M-SEARCH',
];

/** Query strings for every route that takes one (a list's filters, `limit`, `cursor`, anything else). */
export const HOSTILE_QUERIES: readonly string[] = [
  'limit=0',
  'limit=-1',
  'limit=201',
  'limit=1e400',
  'limit=1.5',
  'limit=abc',
  'limit=9007199254740993',
  'limit=',
  'limit=1&limit=2',
  'limit[]=1',
  'cursor=',
  'cursor=%FF',
  'cursor=!!!!',
  'cursor=e30',
  `cursor=${'A'.repeat(600)}`,
  'q=%00',
  'q=%ED%A0%80',
  'q=%25_%5C',
  `q=${'x'.repeat(5_000)}`,
  'status=',
  'status=bogus',
  'status[]=open',
  'since=9999-99-99',
  'since=%2B275760-09-13T00:00:00.001Z',
  'since=0000-01-01T00:00:00Z',
  'since=2026-12-31T23:59:60Z',
  'severity=bogus',
  'control_id=%00',
  'owner_id=%ED%A0%80',
  'theme=',
  'a[b][c][d][e][f]=1',
  '__proto__[polluted]=1',
  'constructor[prototype][polluted]=1',
  '%ZZ=1',
  '=1',
  '&&&',
  'a=%',
  `${'p'.repeat(100)}=${'v'.repeat(100)}&`.repeat(300),
];

/**
 * Sort positions a forged cursor may carry: values of every JSON type, integers past the columns'
 * ranges, strings no column can hold. Each is encoded with a valid fingerprint for its list.
 */
export const HOSTILE_CURSOR_POSITIONS: readonly unknown[][] = [
  [],
  [2 ** 31],
  [-(2 ** 31) - 1, 'x'],
  [2 ** 31, 'x'],
  [Number.MAX_SAFE_INTEGER + 2, 'x'],
  [1e300, 'x'],
  [-0, 'x'],
  [0.5, 'x'],
  ['x'.repeat(200)],
  ['\u0000'],
  ['\ud800', 'x'],
  [null],
  [true, 'x'],
  [[], {}],
  [{}],
  ['1', '2', '3'],
];

/** Header values a client may send; all within what an HTTP/1.1 parser passes through. */
export const HOSTILE_HEADERS: readonly Record<string, string>[] = [
  { 'idempotency-key': '' },
  { 'idempotency-key': ' ' },
  { 'idempotency-key': 'x'.repeat(8_000) },
  { 'idempotency-key': '\u00ff\u00fe\u0080' },
  { 'idempotency-key': 'fuzz-reused-key' },
  { 'api-version': '' },
  { 'api-version': 'bogus' },
  { 'api-version': '2026-04-17, 2026-01-30' },
  { 'api-version': '9'.repeat(4_000) },
  { 'ucp-agent': '' },
  { 'ucp-agent': 'garbage' },
  { 'ucp-agent': 'profile="not a url"' },
  { 'ucp-agent': 'profile=?1' },
  { 'ucp-agent': 'profile="https://agent.example/.well-known/ucp"; version="1900-01-01"' },
  { 'ucp-agent': `profile="https://agent.example/${'x'.repeat(6_000)}"` },
  { 'ucp-agent': 'profile="https://\u00ff.example/"' },
  { authorization: '' },
  { authorization: 'Bearer' },
  { authorization: 'Bearer svc_live_000000000000000000000000000000AAAAAA' },
  { authorization: `Bearer ${'x'.repeat(8_000)}` },
  { authorization: 'Basic Og==' },
  { authorization: 'Payment' },
  { authorization: 'Payment !!!' },
  { authorization: 'Payment ====' },
  { authorization: `Payment ${Buffer.from('not json').toString('base64url')}` },
  { 'x-api-key': 'svc_live_\u00ff' },
  { 'request-id': 'x'.repeat(5_000) },
  { 'request-id': '\u00ff' },
  { accept: 'text/html' },
  { 'accept-encoding': 'gzip;q=bogus' },
  { 'content-encoding': 'gzip' },
  { 'content-length': '0' },
  { origin: 'https://evil.example' },
  { 'x-forwarded-for': '::ffff:999.1.1.1, bogus' },
];

/** JSON texts of `Authorization: Payment` credentials: wrong shapes and awkward numbers. */
export function hostileCredentials(challenge: Record<string, string>): string[] {
  const echo = JSON.stringify(challenge);
  /** The challenge echoed with one of its members given as raw JSON text. */
  const echoWith = (member: string, raw: string) =>
    JSON.stringify({ ...challenge, [member]: 0 }).replace(`"${member}":0`, `"${member}":${raw}`);
  return [
    '{}',
    '[]',
    'null',
    '1e400',
    '{"challenge":{},"payload":{}}',
    '{"challenge":null,"payload":null}',
    `{"challenge":${echo}}`,
    `{"challenge":${echo},"payload":{"spt":1e400}}`,
    `{"challenge":${echo},"payload":{"spt":"spt_fuzz","externalId":1e400}}`,
    `{"challenge":${echo},"payload":{"spt":"spt_\\u0000"}}`,
    `{"challenge":${echo},"payload":{"spt":"spt_\\ud800"}}`,
    `{"challenge":${echo},"payload":{"spt":"spt_fuzz_unknown"}}`,
    `{"challenge":${echo},"payload":{"spt":"${'s'.repeat(10_000)}"}}`,
    `{"challenge":${echo},"payload":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
    `{"challenge":${echo},"payload":{"x":${'['.repeat(10_000)}${']'.repeat(10_000)}}}`,
    `{"challenge":${echoWith('expires', '1e400')},"payload":{"spt":"spt_fuzz"}}`,
    `{"challenge":${echoWith('expires', '"+275760-09-13T00:00:00.001Z"')},"payload":{"spt":"spt_fuzz"}}`,
    `{"challenge":${echoWith('request', '"bm90IGpzb24"')},"payload":{"spt":"spt_fuzz"}}`,
    `{"challenge":${echoWith('id', '""')},"payload":{"spt":"spt_fuzz"}}`,
    `{"challenge":${echoWith('id', '"\\u0000"')},"payload":{"spt":"spt_fuzz"}}`,
    `{"challenge":${echoWith('opaque', '{"a":1e400}')},"payload":{"spt":"spt_fuzz"}}`,
  ];
}

export interface MultipartShape {
  name: string;
  contentType: string;
  body: Buffer;
}

/**
 * Multipart bodies for a form whose file part is `file`: broken framing (no or wrong boundary,
 * cut off, bad part headers), limits (two files, too many parts, an oversized field) and odd
 * names, each as raw bytes.
 */
export function multipartShapes(): MultipartShape[] {
  const boundary = 'fuzzBoundary7MA4YWxk';
  const type = `multipart/form-data; boundary=${boundary}`;
  const part = (headers: string, content: string) => `--${boundary}\r\n${headers}\r\n\r\n${content}\r\n`;
  const file = (name = 'file', filename = 'notes.txt') =>
    `Content-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: text/plain`;
  const field = (name: string) => `Content-Disposition: form-data; name="${name}"`;
  const end = `--${boundary}--\r\n`;
  const shape = (name: string, body: string, contentType = type): MultipartShape => ({
    name,
    contentType,
    body: Buffer.from(body, 'latin1'),
  });
  const wellFormed = part(file(), 'evidence notes') + end;
  return [
    shape('no boundary parameter', wellFormed, 'multipart/form-data'),
    shape('an empty boundary', wellFormed, 'multipart/form-data; boundary='),
    shape('a boundary the body does not use', wellFormed, 'multipart/form-data; boundary=other'),
    shape('a quoted boundary with spaces', wellFormed, 'multipart/form-data; boundary="a b c"'),
    shape('a boundary of 300 characters', wellFormed, `multipart/form-data; boundary=${'b'.repeat(300)}`),
    shape('cut off inside the file', `--${boundary}\r\n${file()}\r\n\r\nevidence no`),
    shape('cut off inside the part headers', `--${boundary}\r\nContent-Disposi`),
    shape('cut off after the delimiter', `--${boundary}`),
    shape('no closing delimiter', part(file(), 'evidence notes')),
    shape(
      'a field, then a file cut off',
      `${part(field('title'), 'Notes')}--${boundary}\r\n${file()}\r\n\r\nev`,
    ),
    shape(
      'a file, then a field cut off',
      `${part(file(), 'evidence notes')}--${boundary}\r\n${field('title')}\r\n\r\nNo`,
    ),
    shape('part headers without a colon', part('garbage header line', 'evidence notes') + end),
    shape('a part without Content-Disposition', part('Content-Type: text/plain', 'evidence notes') + end),
    shape(
      'a disposition without a name',
      part('Content-Disposition: form-data; filename="a.txt"', 'x') + end,
    ),
    shape(
      'a disposition that is not form-data',
      part('Content-Disposition: attachment; name="file"', 'x') + end,
    ),
    shape('part headers over 80 KiB', part(`X-Padding: ${'a'.repeat(90_000)}\r\n${file()}`, 'x') + end),
    shape('lines ended by LF only', wellFormed.replaceAll('\r\n', '\n')),
    shape('an empty body', ''),
    shape('only the closing delimiter', end),
    shape('not multipart at all', 'this is not a form'),
    shape('two files', part(file(), 'one') + part(file('file', 'two.txt'), 'two') + end),
    shape('more parts than allowed', `${part(field('title'), 'x').repeat(40)}${part(file(), 'notes')}${end}`),
    shape('a field over 64 KiB', part(field('title'), 'x'.repeat(70_000)) + part(file(), 'notes') + end),
    shape('a file over the size limit', part(file(), 'x'.repeat(70_000)) + end),
    shape('a field named __proto__', part(field('__proto__'), 'x') + part(file(), 'notes') + end),
    shape('a field named constructor', part(field('constructor'), 'x') + part(file(), 'notes') + end),
    shape(
      'a JSON field that is not JSON',
      part(`${field('title')}\r\nContent-Type: application/json`, '{not json') + part(file(), 'notes') + end,
    ),
    shape('a NUL in a field', part(field('title'), 'a\u0000b') + part(file(), 'notes') + end),
    shape('a file part without a file name', part(field('file'), 'notes') + end),
    shape('a file name with a NUL and a path', part(file('file', '../../a\u0000.txt'), 'notes') + end),
    shape(
      'a file name in bad percent-encoding',
      part(`Content-Disposition: form-data; name="file"; filename*=UTF-8''%ED%A0%80%ZZ.txt`, 'notes') + end,
    ),
    shape(
      'a UTF-16 field',
      part(`${field('title')}; charset=utf-16`, '\u00ff') + part(file(), 'notes') + end,
    ),
    shape('a multipart/mixed body', wellFormed, `multipart/mixed; boundary=${boundary}`),
    shape('a file of NUL bytes', part(file('file', 'a.pdf'), '\u0000'.repeat(100)) + end),
  ];
}

/**
 * `next` values that try to send a person off the site after signing in or out: dot segments that
 * resolve to a network-path, encoded dots and slashes, backslashes, tabs and newlines, userinfo,
 * schemes, and padding that pushes past the length bound.
 */
export const HOSTILE_REDIRECTS: readonly string[] = [
  '//evil.example/phish',
  '///evil.example',
  '/w/../..//evil.example/phish',
  '/..//evil.example/',
  '/.//evil.example',
  '/%2e%2e//evil.example/',
  '/%2E%2E//evil.example/',
  '/w/%2e%2e/%2e%2e//evil.example',
  '/./..//evil.example',
  '/w/..//..//evil.example',
  '/\\evil.example',
  '/\\/evil.example',
  '\\\\evil.example',
  '/..\\evil.example',
  '/\t/evil.example',
  '/\n/evil.example',
  '/\r\n/evil.example',
  '/%09/evil.example',
  '/ /evil.example',
  '/\u3000/evil.example',
  '//evil.example@svc.test/',
  '/@evil.example',
  'https://evil.example/',
  'https:evil.example',
  'HTTPS://evil.example',
  '//evil.example:443/',
  'javascript:alert(1)',
  'jAvAsCrIpT:alert(1)',
  'data:text/html,<script>alert(1)</script>',
  '/w\u0000//evil.example',
  `/${'a/'.repeat(300)}`,
  '',
];

/** Values of a form field as a browser (or a script posing as one) may send them: raw text. */
export const HOSTILE_FORM_VALUES: readonly string[] = [
  '',
  ' ',
  'x'.repeat(20_000),
  '\u0000',
  '\ud800',
  '\u202eevil',
  '-1',
  '0',
  '6',
  '1e400',
  '9007199254740993',
  '2026-02-30',
  '9999-99-99',
  '1969-12-31T23:59:59Z',
  'per_nobody',
  'ctl_nonexistent',
  `per_${'a'.repeat(5000)}`,
  ['..', '..', 'etc', 'passwd'].join('/'),
  '<script>alert(1)</script>',
  '=HYPERLINK("https://evil.example")',
  'javascript:alert(1)',
  'http://127.0.0.1:22/',
  'null',
  '[]',
  '{"__proto__":{"x":1}}',
  '😀'.repeat(300),
];
