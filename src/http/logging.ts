import pino, { type Logger, type LoggerOptions } from 'pino';

/** Keys blanked out wherever they appear in a log line (top level and one level down). */
const SECRET_KEYS = [
  'authorization',
  'password',
  'token',
  'secret',
  'secretKey',
  'secret_key',
  'apiKey',
  'api_key',
  'smtpUrl',
  'credential',
];

/**
 * People's addresses: business lines log ids instead (and mask addresses inside messages, see
 * shared/redact.ts); these keys are a net for a line that passes one by mistake.
 */
const PERSONAL_KEYS = ['email', 'buyerEmail', 'buyer_email', 'ownerEmail', 'to_address'];

const CENSOR = '[redacted]';
const REDACTED_KEYS: ReadonlySet<string> = new Set([...SECRET_KEYS, ...PERSONAL_KEYS]);

/** Header paths pino blanks out (request logs carry headers two levels down). */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers["x-api-key"]',
  // The one-time principal handle of an MCP tool call (api/principal-handles.ts).
  'req.headers["x-svc-principal-handle"]',
];

/**
 * Blanks out the secret and personal keys of a log line at the top level and one level down, in
 * one pass over its keys (pino's wildcard paths, `*.token` and the like, cost half of a request's
 * logging). The line's own objects are never changed: what is blanked is copied first. The
 * bindings of child loggers are not looked at: the service makes none but Fastify's request id.
 */
export function redactKeys(line: Record<string, unknown>): Record<string, unknown> {
  let out = line;
  for (const key in line) {
    const value = line[key];
    const redacted = REDACTED_KEYS.has(key) ? CENSOR : redactNested(value);
    if (redacted !== value) {
      if (out === line) out = { ...line };
      out[key] = redacted;
    }
  }
  return out;
}

function redactNested(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  let out: Record<string, unknown> | undefined;
  for (const key in value) {
    if (!REDACTED_KEYS.has(key)) continue;
    out ??=
      value instanceof Error
        ? Object.assign(Object.create(Object.getPrototypeOf(value)), value, {
            message: value.message,
            stack: value.stack,
          })
        : { ...value };
    (out as Record<string, unknown>)[key] = CENSOR;
  }
  return out ?? value;
}

export function loggerOptions(level: LoggerOptions['level']): LoggerOptions {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: CENSOR },
    formatters: { log: redactKeys },
    base: { service: 'svc' },
  };
}

/**
 * The service's own logger on stdout. Lines are written in batches (32 KB, or after at most
 * 100 ms) instead of one write each: each write goes through libuv's thread pool, and at 4 KB
 * batches that hand-over cost about 2 us of system time per request line of a cached read (a
 * write per line, 7% of its time). On exit, a crash included, what is buffered is written
 * synchronously; only a killed process (SIGKILL) loses up to the last 100 ms of lines. Lines are
 * handed over as bytes: given strings, the destination measured its whole pending batch again with
 * every line (about 1.2 us a line); as bytes it keeps their lengths and joins them once per write.
 */
export function stdoutLogger(level: LoggerOptions['level']): Logger {
  const destination = pino.destination({
    dest: 1,
    sync: false,
    minLength: 32 * 1024,
    maxWrite: 64 * 1024,
    periodicFlush: 100,
    contentMode: 'buffer',
  });
  // In this mode it takes Buffers, which its typings do not say.
  const bytes = destination as unknown as { write(line: Buffer): boolean };
  return pino(loggerOptions(level), { write: (line: string) => bytes.write(Buffer.from(line)) });
}
