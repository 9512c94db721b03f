/**
 * `npm run agent -- buy --protocol acp|ucp|mpp --item <id> --email <addr> [--base-url <url>]
 * [--token <spt>] [--psp-url <url>] [--psp-key <sk_test_...>] [--payment-method <pm_...>]`
 *
 * An example agent: reads the deployment's discovery document, buys one item for the buyer, prints
 * each step and the final order; exits 1 on any failure, 2 on a usage error.
 */
import { parseArgs } from 'node:util';
import { AgentError, BUY, PROTOCOLS, type Protocol } from './buy.ts';
import { SANDBOX_DEFAULTS } from './psp.ts';

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

const USAGE =
  'usage: npm run agent -- buy --protocol acp|ucp|mpp --item <id> --email <addr> [--base-url <url>] ' +
  '[--token <spt>] [--psp-url <url>] [--psp-key <key>] [--payment-method <pm>]';

export async function main(argv: string[], io: Io): Promise<number> {
  if (argv.some((arg) => arg === '--help' || arg === '-h') || argv[0] === 'help') {
    io.out(USAGE);
    return 0;
  }
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    io.err(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { protocol, options } = parsed;
  try {
    const bought = await BUY[protocol](options, (step, text) =>
      io.out(`${protocol} ${step.padEnd(9)} ${text}`),
    );
    io.out(`order ${JSON.stringify(bought.order, null, 2)}`);
    return 0;
  } catch (error) {
    const step = error instanceof AgentError ? error.step : 'error';
    io.err(`${protocol} ${step.padEnd(9)} FAILED: ${(error as Error).message}`);
    return 1;
  }
}

function parse(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      protocol: { type: 'string' },
      item: { type: 'string' },
      email: { type: 'string' },
      'base-url': { type: 'string', default: 'http://localhost:3000' },
      token: { type: 'string' },
      'psp-url': { type: 'string', default: SANDBOX_DEFAULTS.url },
      'psp-key': { type: 'string', default: SANDBOX_DEFAULTS.key },
      'payment-method': { type: 'string', default: 'pm_card_visa' },
    },
  });
  if (positionals.join(' ') !== 'buy') throw new Error('the only command is `buy`');
  const protocol = values.protocol as Protocol;
  if (!PROTOCOLS.includes(protocol)) throw new Error(`--protocol must be one of ${PROTOCOLS.join(', ')}`);
  if (!values.item || !values.email) throw new Error('--item and --email are required');
  return {
    protocol,
    options: {
      baseUrl: values['base-url'].replace(/\/+$/, ''),
      item: values.item,
      email: values.email,
      ...(values.token ? { token: values.token } : {}),
      psp: { url: values['psp-url'], key: values['psp-key'] },
      paymentMethod: values['payment-method'],
    },
  };
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2), {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  });
}
