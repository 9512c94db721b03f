import { performance } from 'node:perf_hooks';
import { type Config, ConfigError, loadConfig, redactedRedisUrl } from './config.ts';
import { stdoutLogger } from './http/logging.ts';
import { type RunningPspSandbox, sandboxDataFile, startPspSandbox } from './psp/index.ts';
import { createRuntime, paymentProviderFor, type Runtime } from './runtime.ts';

function banner(
  runtime: Runtime,
  sandbox: RunningPspSandbox | undefined,
  address: string,
  startedMs: number,
): string {
  const { config, database, mailTransport } = runtime;
  const psp = sandbox
    ? `PSP sandbox at ${sandbox.url} (secret key ${config.psp.secretKey}; mint test tokens, see README)`
    : `${config.psp.kind === 'remote' ? config.psp.apiBase.origin : ''} (PSP_SECRET_KEY)`;
  const mail =
    mailTransport.kind === 'smtp'
      ? 'SMTP (SMTP_URL)'
      : `dev mailbox at ${config.baseUrl}/dev/mailbox (development only)`;
  return [
    `svc ready in ${Math.round(startedMs)} ms`,
    `  service      ${config.baseUrl} (listening on ${address})`,
    `  database     ${database.location}${runtime.appliedMigrations.length ? ` (applied ${runtime.appliedMigrations.join(', ')})` : ''}`,
    `  payments     ${psp}`,
    `  mail         ${mail}`,
    `  rate limits  ${config.redis ? `shared through ${redactedRedisUrl(config.redis.url)} (REDIS_URL)` : 'counted in this process (REDIS_URL shares them)'}`,
    `  app          ${config.baseUrl}/ (sign in at ${config.baseUrl}/sign-in; invitations arrive by email)`,
    `  REST API     ${config.baseUrl}/api/v1/docs (keys: in the app under Integrations, or npm run svc -- api-keys create)`,
    `  health       ${config.baseUrl}/healthz  ${config.baseUrl}/readyz`,
  ].join('\n');
}

/** A port the service cannot take, in the one line that says which setting moves it. */
class PortUnavailable extends Error {}

async function listening<T>(
  where: { what: string; host: string; port: number; variable: string },
  listen: () => Promise<T>,
): Promise<T> {
  try {
    return await listen();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const problem =
      code === 'EADDRINUSE'
        ? 'is already in use'
        : code === 'EACCES'
          ? 'needs privileges we lack'
          : undefined;
    if (problem === undefined) throw error;
    throw new PortUnavailable(
      `${where.what} ${where.port} on ${where.host} ${problem}; set ${where.variable} to another port`,
    );
  }
}

async function start(config: Config): Promise<void> {
  const started = performance.now();
  const { psp } = config;
  const sandbox =
    psp.kind === 'sandbox'
      ? await listening(
          { what: 'PSP sandbox port', host: '127.0.0.1', port: psp.port, variable: 'PSP_SANDBOX_PORT' },
          () =>
            startPspSandbox({
              port: psp.port,
              secretKey: psp.secretKey,
              dataFile: sandboxDataFile(config.dataDir),
              webhookEndpoint: { url: `${config.baseUrl}/psp/events`, secret: config.psp.webhookSecret },
            }),
        )
      : undefined;
  const runtime = await createRuntime(config, {
    logger: stdoutLogger(config.logLevel),
    paymentProvider: paymentProviderFor(config, sandbox?.url),
  });
  const address = await listening(
    { what: 'port', host: config.host, port: config.port, variable: 'PORT' },
    () => runtime.app.listen({ host: config.host, port: config.port }),
  );
  runtime.jobs.start();
  console.log(banner(runtime, sandbox, address, performance.now() - started));
  // Compiled once the service answers, not before: a schema that cannot compile is still
  // reported at start, without delaying the first healthy answer.
  runtime.app.compileDeferredSchemas().catch((error: unknown) => {
    runtime.app.log.error({ err: error }, 'schemas that do not compile: their routes answer 500');
  });

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    runtime.app.log.info({ signal }, 'shutting down: finishing requests and running jobs');
    try {
      await runtime.close();
      await sandbox?.close();
      process.exit(0);
    } catch (error) {
      runtime.app.log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/** Starts the service on the environment's configuration; a configuration error exits 78. */
export async function serve(): Promise<void> {
  try {
    await start(loadConfig());
  } catch (error) {
    if (error instanceof ConfigError || error instanceof PortUnavailable) {
      console.error(error.message);
      process.exit(78);
    }
    throw error;
  }
}
