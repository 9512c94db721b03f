import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * How the receiver answers a request: `hang` holds the answer until the receiver closes; `endless`
 * sends the head and body but never ends the answer.
 */
export type Answer =
  | { status: number; headers?: Record<string, string>; body?: string; endless?: boolean }
  | 'hang';

export interface TestReceiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** Sets how the following requests are answered (204 until told otherwise). */
  answer(with_: (request: ReceivedRequest, index: number) => Answer): void;
  /** Resolves once `count` requests have arrived. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
}

/** A real HTTP receiver on loopback that records every request, closed when the test ends. */
export async function startReceiver(t: TestContext): Promise<TestReceiver> {
  const requests: ReceivedRequest[] = [];
  const held: ServerResponse[] = [];
  let decide: (request: ReceivedRequest, index: number) => Answer = () => ({ status: 204 });
  const server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const request: ReceivedRequest = {
        method: incoming.method ?? '',
        path: incoming.url ?? '',
        headers: incoming.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(request);
      const answer = decide(request, requests.length - 1);
      if (answer === 'hang') {
        held.push(response);
        return;
      }
      response.writeHead(answer.status, answer.headers);
      if (answer.endless) response.write(answer.body ?? '');
      else response.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    answer(with_) {
      decide = with_;
    },
    async waitFor(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length < count) {
        if (Date.now() > deadline) throw new Error(`expected ${count} requests, got ${requests.length}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return requests;
    },
  };
}
