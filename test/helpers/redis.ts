import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect } from 'node:net';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './ports.ts';

/**
 * With TEST_REDIS_URL set (e.g. redis://127.0.0.1:6379), every test service counts its rate limits
 * in that Redis, each under a key prefix of its own; unset, the Redis tests are skipped.
 */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL || undefined;

/** A key prefix no other test uses, so that tests sharing one Redis never share a counter. */
export function uniqueKeyPrefix(): string {
  return `test:${randomBytes(6).toString('hex')}:`;
}

/** The configuration pointing a test service at TEST_REDIS_URL (nothing when it is unset). */
export function testRedisEnv(): Record<string, string> {
  return TEST_REDIS_URL ? { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: uniqueKeyPrefix() } : {};
}

let serverInstalled: boolean | undefined;

/**
 * Whether redis-server runs here: asked by the tests that start their own, not at import, which
 * every test file starting a service would pay with a child process.
 */
export function redisServerInstalled(): boolean {
  serverInstalled ??= spawnSync('redis-server', ['--version']).status === 0;
  return serverInstalled;
}

/** A Redis of the test's own on a loopback port, which the test may stop, freeze and start again. */
export interface OwnRedis {
  url: string;
  /** Kills it (SIGKILL); its counts are gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port. */
  restart(): Promise<void>;
  /** Stops it answering without closing connections (SIGSTOP), until `thaw` (SIGCONT). */
  freeze(): void;
  thaw(): void;
}

export async function startOwnRedis(t: TestContext): Promise<OwnRedis> {
  const port = await freePort();
  let server: ChildProcess | undefined;
  const start = async () => {
    server = spawn(
      'redis-server',
      ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    await waitUntilListening(port);
  };
  const kill = async () => {
    const running = server;
    server = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = once(running, 'exit');
    running.kill('SIGKILL');
    await exited;
  };
  await start();
  t.after(kill);
  return {
    url: `redis://127.0.0.1:${port}`,
    kill,
    restart: start,
    freeze: () => server?.kill('SIGSTOP'),
    thaw: () => server?.kill('SIGCONT'),
  };
}

async function waitUntilListening(port: number): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const socket = connect(port, '127.0.0.1');
    const connected = await new Promise<boolean>((resolve) => {
      socket.once('connect', () => resolve(true));
      socket.once('error', () => resolve(false));
    });
    socket.destroy();
    if (connected) return;
    await sleep(50);
  }
  throw new Error(`redis-server did not start listening on port ${port}`);
}
