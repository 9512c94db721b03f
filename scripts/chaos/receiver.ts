/** A webhook receiver on loopback: checks each signature and keeps every copy of every event. */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  type: string;
  /** The record the event is about (`data.id`). */
  dataId: string | undefined;
  /** When each copy arrived. */
  arrivals: number[];
}

export interface Receiver {
  url: string;
  /** By `webhook-id`. */
  readonly events: Map<string, Received>;
  /** Copies whose signature did not verify (answered 400, so the service retries them). */
  badSignatures(): number;
  /** The subscription's secret, once the subscription exists. */
  trust(secret: string): void;
  close(): Promise<void>;
}

function header(headers: IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  return Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
}

export async function startReceiver(): Promise<Receiver> {
  const events = new Map<string, Received>();
  let verifier: Webhook | undefined;
  let bad = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const payload = Buffer.concat(chunks).toString('utf8');
      const signed = {
        'webhook-id': header(request.headers, 'webhook-id'),
        'webhook-timestamp': header(request.headers, 'webhook-timestamp'),
        'webhook-signature': header(request.headers, 'webhook-signature'),
      };
      let event: { type?: string; data?: { id?: string } };
      try {
        if (verifier === undefined) throw new Error('no secret yet');
        event = verifier.verify(payload, signed) as typeof event;
      } catch {
        bad++;
        response.writeHead(400).end();
        return;
      }
      const id = signed['webhook-id'];
      const seen = events.get(id) ?? { type: event.type ?? '', dataId: event.data?.id, arrivals: [] };
      seen.arrivals.push(Date.now());
      events.set(id, seen);
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    events,
    badSignatures: () => bad,
    trust(secret) {
      verifier = new Webhook(secret.replace(/^whsec_/, ''));
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
