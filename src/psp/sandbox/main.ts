import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig } from '../../config.ts';
import { sandboxDataFile } from './data-file.ts';
import { DEFAULT_WEBHOOK_SECRET, type SandboxEvents, type WebhookEndpoint } from './events.ts';
import type { SandboxFaults } from './faults.ts';
import { buildPspSandbox, DEFAULT_SECRET_KEY, type PspSandboxOptions } from './server.ts';
import type { SandboxState } from './state.ts';

const DEFAULT_HOST = '127.0.0.1';
const DEFAULT_PORT = 12111;

export interface StartPspSandboxOptions extends PspSandboxOptions {
  /** 0 (the default) picks a free port. */
  readonly port?: number | undefined;
  readonly host?: string | undefined;
}

export interface RunningPspSandbox {
  /** Base URL, e.g. `http://127.0.0.1:12111`. */
  readonly url: string;
  readonly port: number;
  readonly state: SandboxState;
  readonly faults: SandboxFaults;
  /** Events sent to the webhook endpoint: list, resend, pause, resume, flush. */
  readonly events: SandboxEvents;
  close(): Promise<void>;
}

/** Starts the sandbox in-process (for the main service and tests). */
export async function startPspSandbox(options: StartPspSandboxOptions = {}): Promise<RunningPspSandbox> {
  const { app, state, faults, events } = buildPspSandbox(options);
  const host = options.host ?? DEFAULT_HOST;
  await app.listen({ host, port: options.port ?? 0 });
  const { port } = app.server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return { url: `http://${urlHost}:${port}`, port, state, faults, events, close: () => app.close() };
}

function portFromEnvironment(value: string | undefined): number {
  if (value === undefined || value === '') return DEFAULT_PORT;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new Error(`PSP_SANDBOX_PORT must be a port number, got '${value}'`);
  }
  return port;
}

function webhookEndpointFromEnvironment(): WebhookEndpoint | undefined {
  const url = process.env.PSP_SANDBOX_WEBHOOK_URL;
  if (url === undefined || url === '') return undefined;
  const protocol = URL.canParse(url) ? new URL(url).protocol : undefined;
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new Error(`PSP_SANDBOX_WEBHOOK_URL must be an http(s) URL, got '${url}'`);
  }
  return { url, secret: process.env.PSP_SANDBOX_WEBHOOK_SECRET || DEFAULT_WEBHOOK_SECRET };
}

async function runStandalone(): Promise<void> {
  let dataDir: string;
  try {
    dataDir = loadConfig().dataDir;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    process.exit(78);
  }
  const dataFile = sandboxDataFile(dataDir);
  const webhookEndpoint = webhookEndpointFromEnvironment();
  const sandbox = await startPspSandbox({
    host: DEFAULT_HOST,
    port: portFromEnvironment(process.env.PSP_SANDBOX_PORT),
    secretKey: process.env.PSP_SANDBOX_SECRET_KEY || DEFAULT_SECRET_KEY,
    dataFile,
    webhookEndpoint,
  });
  const sending = webhookEndpoint ? `, events to ${webhookEndpoint.url}` : '';
  console.log(`PSP sandbox (Stripe emulator) listening on ${sandbox.url}, state in ${dataFile}${sending}`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void sandbox.close());
  }
}

if (import.meta.main) await runStandalone();
