import type { FastifyBaseLogger } from 'fastify';
import pino, { type Bindings, type ChildLoggerOptions, type LevelWithSilentOrString, type LogFn } from 'pino';

type LogArguments = Parameters<LogFn>;

/**
 * A request's logger: a child of the service's, bound to the request id, made only when needed.
 * Fastify makes that child for every request, and pino's child costs more than the one line most
 * answers log (`request completed`). That line, an `info` with fields and no level or serializers
 * of the route's own, goes to the service's logger with the id among its fields: the same JSON.
 */
class RequestLogger implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  /** No level or serializers of the route's own: the service's logger writes what the child would. */
  readonly #asParent: boolean;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
    this.#asParent = options.level === undefined && options.serializers === undefined;
  }

  #logger(): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }

  get level(): LevelWithSilentOrString {
    return this.#child?.level ?? this.#options.level ?? this.#parent.level;
  }

  set level(level: LevelWithSilentOrString) {
    this.#logger().level = level;
  }

  fatal(...args: LogArguments): void {
    this.#logger().fatal(...args);
  }
  error(...args: LogArguments): void {
    this.#logger().error(...args);
  }
  warn(...args: LogArguments): void {
    this.#logger().warn(...args);
  }
  info(...args: LogArguments): void {
    const fields: unknown = args[0];
    if (this.#child === undefined && this.#asParent && isPlainObject(fields)) {
      (args as unknown[])[0] = { ...this.#bindings, ...fields };
      this.#parent.info(...args);
    } else {
      this.#logger().info(...args);
    }
  }
  debug(...args: LogArguments): void {
    this.#logger().debug(...args);
  }
  trace(...args: LogArguments): void {
    this.#logger().trace(...args);
  }
  silent(...args: LogArguments): void {
    this.#logger().silent(...args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#logger().child(bindings, options);
  }

  /**
   * The `request completed` line. While it would go to the service's logger (see `info`) and that
   * is pino, the line is written to pino's stream as pino writes it (level, time, the logger's
   * bindings, the request's, the fields, the message), without pino's way for any line: its
   * formatters and redaction find nothing to change in these fields, and skipping them took a
   * cached `GET /api/v1/me` from 33-35 to 29-31 us of CPU an answer.
   */
  completed(fields: RequestCompleted): void {
    const parent = this.#parent as unknown as Record<symbol, unknown> & Partial<pino.Logger>;
    const stream = parent[streamSym] as
      | ({ write(line: string): unknown } & Record<symbol, unknown>)
      | undefined;
    const parentBindings = parent[chindingsSym];
    if (
      this.#child !== undefined ||
      !this.#asParent ||
      typeof stream?.write !== 'function' ||
      // A stream that takes each line's level beside it (pino.multistream) is left to pino.
      stream[needsMetadataGsym] ||
      typeof parentBindings !== 'string' ||
      parent.isLevelEnabled?.('info') !== true
    ) {
      this.info(fields, 'request completed');
      return;
    }
    stream.write(
      `{"level":${INFO},"time":${Date.now()}${parentBindings}${boundFields(this.#bindings)},"method":${JSON.stringify(fields.method)},"route":${JSON.stringify(fields.route)},"status":${JSON.stringify(fields.status)},"ms":${JSON.stringify(fields.ms)},"msg":"request completed"}\n`,
    );
  }
}

/** What the line logged once a request is answered says (never the URL: it may carry a secret). */
export interface RequestCompleted {
  method: string;
  /** The route's pattern. */
  route: string;
  status: number;
  ms: number;
}

const { streamSym, chindingsSym, needsMetadataGsym } = pino.symbols;
const INFO = pino.levels.values.info;

/** Bindings as pino writes them into a line: `,"key":value` each. */
function boundFields(bindings: Bindings): string {
  let json = '';
  for (const key in bindings) {
    const value = bindings[key];
    if (value !== undefined) json += `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
  }
  return json;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/** Logs that `request` was answered; see `RequestLogger.completed`. */
export function logRequestCompleted(log: FastifyBaseLogger, fields: RequestCompleted): void {
  if (log instanceof RequestLogger) log.completed(fields);
  else log.info(fields, 'request completed');
}

/** Fastify's `childLoggerFactory`: each request's logger, made when first used. */
export function requestLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new RequestLogger(parent, bindings, options);
}
