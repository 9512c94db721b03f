// db-scope: sqlite (on postgres: test/channels/acp.test.ts, test/channels/ucp.test.ts, test/channels/mpp.test.ts, test/channels/acp-discovery.test.ts)

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import Fastify from 'fastify';
import { main } from '../../scripts/doctor/main.ts';
import { startPspSandbox } from '../../src/psp/sandbox/main.ts';
import { testDialect } from '../helpers/database.ts';
import { capturedIo, type Deployment, runNpmScript, startDeployment } from '../helpers/deployment.ts';
import { freePort } from '../helpers/ports.ts';
import { SANDBOX_KEY } from '../helpers/purchase.ts';
import { startServiceProcess } from '../helpers/service-process.ts';

interface Report {
  checks: { check: string; result: 'pass' | 'fail' | 'skip'; evidence: string }[];
  summary: { pass: number; fail: number; skip: number };
}

async function doctor(baseUrl: string, deployment: Deployment, extra: string[] = []) {
  const { out, io } = capturedIo();
  const code = await main(['--base-url', baseUrl, '--json', ...deployment.pspFlags, ...extra], io);
  return { code, report: JSON.parse(out.join('\n')) as Report };
}

const failing = (report: Report) => report.checks.filter((check) => check.result === 'fail');

interface ProxiedRequest {
  method: string;
  url: string;
  authorization?: string;
  body: string;
}

interface FakeAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

interface Tamper {
  /** An answer of the proxy's own instead of the service's. */
  answer?: (request: ProxiedRequest) => FakeAnswer | undefined;
  /** Sees each answer of the service as it passes. */
  observe?: (request: ProxiedRequest, answer: FakeAnswer) => void;
  /** Changes the body of a service's answer. */
  rewrite?: (url: string, body: string) => string;
}

/**
 * A deliberately broken deployment: a proxy in front of the service that speaks for it at its own
 * address (every mention of the service's origin rewritten) and lets `tamper` change answers.
 */
async function startBrokenDeployment(t: TestContext, upstream: string, tamper: Tamper): Promise<string> {
  const proxy = Fastify();
  proxy.removeAllContentTypeParsers();
  proxy.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  proxy.all('*', async (request, reply) => {
    const body = typeof request.body === 'string' ? request.body : '';
    const proxied: ProxiedRequest = {
      method: request.method,
      url: request.url,
      ...(request.headers.authorization ? { authorization: request.headers.authorization } : {}),
      body,
    };
    const faked = tamper.answer?.(proxied);
    if (faked) return reply.code(faked.status).headers(faked.headers).send(faked.body);
    const headers = Object.fromEntries(
      Object.entries(request.headers).filter(
        (entry): entry is [string, string] =>
          typeof entry[1] === 'string' && !['host', 'content-length', 'connection'].includes(entry[0]),
      ),
    );
    const answer = await fetch(`${upstream}${request.url}`, {
      method: request.method,
      headers,
      ...(body ? { body } : {}),
    });
    const text = (await answer.text()).replaceAll(upstream, origin);
    const forwarded: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (!['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'etag'].includes(name)) {
        forwarded[name] = value;
      }
    });
    const sent = tamper.rewrite ? tamper.rewrite(request.url, text) : text;
    tamper.observe?.(proxied, { status: answer.status, headers: forwarded, body: sent });
    return reply.code(answer.status).headers(forwarded).send(sent);
  });
  await proxy.listen({ port, host: '127.0.0.1' });
  t.after(() => proxy.close());
  return origin;
}

describe(`the doctor on ${testDialect}`, () => {
  it('passes every check against the service on the sandbox, buying once per protocol with sandbox tokens unasked', async (t) => {
    const deployment = await startDeployment(t);
    const { code, report } = await doctor(deployment.baseUrl, deployment);
    assert.deepEqual(failing(report), []);
    assert.equal(code, 0);
    assert.deepEqual(report.summary, { pass: report.checks.length, fail: 0, skip: 0 });
    assert.ok(report.checks.length >= 19);
    const counts = await deployment.counts();
    assert.deepEqual([counts.succeeded, counts.orders], [3, 3], 'one purchase per protocol');
  });

  it('buys nothing unasked with tokens of a sandbox that serves another deployment, and says so', async (t) => {
    const deployment = await startDeployment(t);
    const elsewhere = await startPspSandbox({ secretKey: SANDBOX_KEY });
    t.after(() => elsewhere.close());
    const { code, report } = await doctor(deployment.baseUrl, deployment, ['--psp-url', elsewhere.url]);
    assert.equal(code, 0);
    const skipped = report.checks.filter((check) => check.result === 'skip');
    assert.deepEqual(
      skipped.map((check) => check.check),
      ['acp.purchase', 'ucp.purchase', 'mpp.purchase', 'mpp.challenge.single-use'],
    );
    assert.ok(skipped.every((check) => check.evidence.includes('--allow-purchases')));
    assert.ok(skipped.every((check) => check.evidence.includes(`not ${deployment.baseUrl}`)));
    const counts = await deployment.counts();
    assert.deepEqual([counts.paymentIntents, counts.orders], [0, 0]);
  });

  it('buys nothing unasked when no sandbox answers at --psp-url, and says where it looked', async (t) => {
    const deployment = await startDeployment(t);
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const { code, report } = await doctor(deployment.baseUrl, deployment, ['--psp-url', nowhere]);
    assert.equal(code, 0);
    const skipped = report.checks.filter((check) => check.result === 'skip');
    assert.equal(skipped.length, 4);
    assert.ok(skipped.every((check) => check.evidence.includes(nowhere)));
    const counts = await deployment.counts();
    assert.deepEqual([counts.paymentIntents, counts.orders], [0, 0]);
  });

  it('fails on exactly catalog.prices when one discovery document has a wrong price', async (t) => {
    const deployment = await startDeployment(t);
    const broken = await startBrokenDeployment(t, deployment.baseUrl, {
      rewrite: (url, body) =>
        url === '/openapi.json' ? body.replace('"amount":"29900"', '"amount":"19900"') : body,
    });
    const { code, report } = await doctor(broken, deployment);
    assert.equal(code, 1);
    const failed = failing(report);
    assert.deepEqual(
      failed.map((check) => check.check),
      ['catalog.prices'],
    );
    assert.match(failed[0]?.evidence ?? '', /svc-pro-monthly: MPP offer 19900 usd, ACP session 29900 usd/);
  });

  it('fails on exactly mpp.challenge.single-use when a paid challenge pays for a second purchase', async (t) => {
    const deployment = await startDeployment(t);
    // Remembers each paid credential's answer and gives it to any later request that carries it.
    const paid = new Map<string, FakeAnswer>();
    const broken = await startBrokenDeployment(t, deployment.baseUrl, {
      answer: ({ authorization }) => (authorization ? paid.get(authorization) : undefined),
      observe: ({ authorization }, answer) => {
        if (authorization?.startsWith('Payment ') && answer.status === 200) paid.set(authorization, answer);
      },
    });
    const { code, report } = await doctor(broken, deployment, ['--allow-purchases']);
    assert.equal(code, 1);
    assert.deepEqual(
      failing(report).map((check) => check.check),
      ['mpp.challenge.single-use'],
    );
  });

  it('`npm run doctor` passes every check against the service started as `npm start` does', async (t) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-doctor-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const port = await freePort();
    const sandboxPort = await freePort();
    const service = await startServiceProcess({
      DATA_DIR: dataDir,
      PORT: String(port),
      BASE_URL: `http://127.0.0.1:${port}`,
      PSP_SANDBOX_PORT: String(sandboxPort),
    });
    t.after(() => service.stop());
    const baseUrl = `http://127.0.0.1:${port}`;
    const { code, stdout, stderr } = await runNpmScript('doctor', [
      '--base-url',
      baseUrl,
      '--allow-purchases',
      '--psp-url',
      `http://127.0.0.1:${sandboxPort}`,
    ]);
    assert.equal(code, 0, `${stdout}\n${stderr}`);
    const lines = stdout.trim().split('\n');
    assert.ok(
      lines.slice(0, -1).every((line) => line.startsWith('PASS  ')),
      stdout,
    );
    assert.match(
      lines.at(-1) ?? '',
      new RegExp(`^doctor ${baseUrl}: (\\d+) checks, \\1 pass, 0 fail, 0 skip$`),
    );
  });
});
