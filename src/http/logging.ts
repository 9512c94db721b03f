import type { LoggerOptions } from 'pino';

/** Paths pino blanks out wherever they appear in a log line. */
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

/** Paths pino blanks out wherever they appear in a log line: at the top level and one level down. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers["x-api-key"]',
  ...[...SECRET_KEYS, ...PERSONAL_KEYS],
  ...[...SECRET_KEYS, ...PERSONAL_KEYS].map((key) => `*.${key}`),
];

export function loggerOptions(level: LoggerOptions['level']): LoggerOptions {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    base: { service: 'svc' },
  };
}
