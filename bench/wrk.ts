import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface WrkResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Answers that were not 2xx or 3xx, and socket errors. */
  failures: number;
}

const WRK = process.env.BENCH_WRK ?? 'wrk';

/**
 * `wrk -t1 -c<connections> -d<seconds>s --latency`: a load generator written in C, in a process of
 * its own, so the figure is the server's and not the client's.
 */
export async function wrk(options: {
  url: string;
  headers?: Record<string, string>;
  connections?: number;
  seconds?: number;
}): Promise<WrkResult> {
  const args = ['-t1', `-c${options.connections ?? 16}`, `-d${options.seconds ?? 5}s`, '--latency'];
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push('-H', `${name}: ${value}`);
  args.push(options.url);
  const { stdout } = await run(WRK, args);
  return parseWrk(stdout);
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

export function parseWrk(out: string): WrkResult {
  const perSecond = /Requests\/sec:\s+([\d.]+)/.exec(out);
  if (!perSecond) throw new Error(`wrk said:\n${out}`);
  const percentile = (p: string) => {
    const match = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(out);
    return match ? Math.round(Number(match[1]) * (UNIT_MS[match[2] ?? 'ms'] ?? 1) * 100) / 100 : Number.NaN;
  };
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const socketErrors = socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0;
  return {
    requestsPerSecond: Math.round(Number(perSecond[1])),
    p50Ms: percentile('50'),
    p99Ms: percentile('99'),
    failures: non2xx + socketErrors,
  };
}
