import { performance } from 'node:perf_hooks';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { loggerOptions } from './http/logging.ts';
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
    `  app          ${config.baseUrl}/ (sign in at ${config.baseUrl}/sign-in; invitations arrive by email)`,
    `  REST API     ${config.baseUrl}/api/v1/docs (keys: in the app under Integrations, or npm run svc -- api-keys create)`,
    `  health       ${config.baseUrl}/healthz  ${config.baseUrl}/readyz`,
  ].join('\n');
}

async function start(config: Config): Promise<void> {
  const started = performance.now();
  const sandbox =
    config.psp.kind === 'sandbox'
      ? await startPspSandbox({
          port: config.psp.port,
          secretKey: config.psp.secretKey,
          dataFile: sandboxDataFile(config.dataDir),
        })
      : undefined;
  const runtime = await createRuntime(config, {
    logger: loggerOptions(config.logLevel),
    paymentProvider: paymentProviderFor(config, sandbox?.url),
  });
  const address = await runtime.app.listen({ host: config.host, port: config.port });
  runtime.jobs.start();
  console.log(banner(runtime, sandbox, address, performance.now() - started));

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

try {
  await start(loadConfig());
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(78);
  }
  throw error;
}
