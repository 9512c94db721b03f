import type { LoggerOptions } from 'pino';

/** Paths pino blanks out wherever they appear in a log line. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.authorization',
  '*.password',
  '*.token',
  '*.secret',
  '*.secretKey',
  '*.secret_key',
  '*.apiKey',
  '*.api_key',
  '*.smtpUrl',
  '*.credential',
];

export function loggerOptions(level: LoggerOptions['level']): LoggerOptions {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    base: { service: 'svc' },
  };
}
