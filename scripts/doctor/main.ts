/**
 * `npm run doctor -- --base-url <url> [--allow-purchases] [--psp-url <url>] [--psp-key <sk_test_...>]
 * [--email <addr>] [--json]`
 *
 * Checks a deployment from the outside against the vendored official schemas and the spec: one
 * line per check (PASS, FAIL or SKIP with its evidence), then a summary; exits 1 when a check
 * fails, 2 on a usage error. It opens and cancels checkout sessions; it buys (once per protocol,
 * with sandbox tokens) when the PSP sandbox at --psp-url serves the deployment checked, or with
 * --allow-purchases.
 */
import { parseArgs } from 'node:util';
import { SANDBOX_DEFAULTS } from '../agent/psp.ts';
import { CHECKS } from './checks.ts';
import { createContext, type DoctorOptions, Skip } from './context.ts';

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

export interface CheckResult {
  check: string;
  result: 'pass' | 'fail' | 'skip';
  evidence: string;
}

const USAGE =
  'usage: npm run doctor -- --base-url <url> [--allow-purchases] [--psp-url <url>] [--psp-key <key>] [--email <addr>] [--json]';

export async function main(argv: string[], io: Io): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    io.err(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { options, json } = parsed;
  const ctx = createContext(options);
  const results: CheckResult[] = [];
  const width = Math.max(...CHECKS.map((check) => check.id.length));
  for (const check of CHECKS) {
    const result = await runCheck(check.id, () => check.run(ctx));
    results.push(result);
    if (!json) io.out(`${result.result.toUpperCase()}  ${result.check.padEnd(width)}  ${result.evidence}`);
  }
  const count = (result: CheckResult['result']) => results.filter((r) => r.result === result).length;
  const summary = { pass: count('pass'), fail: count('fail'), skip: count('skip') };
  if (json) io.out(JSON.stringify({ base_url: options.baseUrl, checks: results, summary }, null, 2));
  else
    io.out(
      `doctor ${options.baseUrl}: ${results.length} checks, ${summary.pass} pass, ${summary.fail} fail, ${summary.skip} skip`,
    );
  return summary.fail > 0 ? 1 : 0;
}

async function runCheck(check: string, run: () => Promise<string>): Promise<CheckResult> {
  try {
    return { check, result: 'pass', evidence: await run() };
  } catch (error) {
    const evidence = oneLine((error as Error).message);
    return { check, result: error instanceof Skip ? 'skip' : 'fail', evidence };
  }
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').slice(0, 1000);

function parse(argv: string[]): { options: DoctorOptions; json: boolean } {
  const { values } = parseArgs({
    args: argv,
    options: {
      'base-url': { type: 'string' },
      'allow-purchases': { type: 'boolean', default: false },
      'psp-url': { type: 'string', default: SANDBOX_DEFAULTS.url },
      'psp-key': { type: 'string', default: SANDBOX_DEFAULTS.key },
      email: { type: 'string', default: 'doctor@example.com' },
      json: { type: 'boolean', default: false },
    },
  });
  if (!values['base-url']) throw new Error('--base-url is required');
  return {
    options: {
      baseUrl: values['base-url'].replace(/\/+$/, ''),
      allowPurchases: values['allow-purchases'],
      psp: { url: values['psp-url'], key: values['psp-key'] },
      email: values.email,
    },
    json: values.json,
  };
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2), {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  });
}
