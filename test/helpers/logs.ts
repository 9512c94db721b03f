import { Writable } from 'node:stream';
import pino, { type Logger, type LoggerOptions } from 'pino';
import { loggerOptions } from '../../src/http/logging.ts';

/** The service's logger (its options, redaction included) at `level`, writing its JSON lines to `lines`. */
export function capturedLogger(level: LoggerOptions['level'] = 'info'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).trim().split('\n'));
      done();
    },
  });
  return { logger: pino(loggerOptions(level), sink), lines };
}
