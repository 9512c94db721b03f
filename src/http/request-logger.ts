import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, LevelWithSilentOrString, LogFn } from 'pino';

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
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/** Fastify's `childLoggerFactory`: each request's logger, made when first used. */
export function requestLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new RequestLogger(parent, bindings, options);
}
