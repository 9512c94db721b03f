import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import { createStripeAdapter } from '../src/psp/index.ts';
import { DEFAULT_STRIPE_VERSION } from '../src/psp/sandbox/server.ts';

/**
 * The least a service can do for an agent's ACP purchase, in a process of its own: a bare Fastify
 * server whose create answers an id, and whose complete charges the token once through the same
 * PSP client the service uses (the Stripe SDK), then answers `completed`. No database, no
 * validation, no idempotency, no workspace: what the agents and the PSP sandbox leave of the
 * machine. Prints its URL once it listens. Arguments: the sandbox's URL and secret key.
 */
const [sandboxUrl = '', secretKey = ''] = process.argv.slice(2);
const psp = createStripeAdapter({
  secretKey,
  apiBase: new URL(sandboxUrl),
  apiVersion: DEFAULT_STRIPE_VERSION,
  webhookSecret: 'whsec_bare',
});
const bare = Fastify();
bare.post('/api/acp/checkout_sessions', (_request, reply) => {
  reply.code(201).send({ id: `cs_${randomUUID()}`, status: 'ready_for_payment' });
});
bare.post<{ Body: { payment_data: { instrument: { credential: { token: string } } } } }>(
  '/api/acp/checkout_sessions/:id/complete',
  async (request) => {
    const outcome = await psp.charge({
      amount: 29900,
      currency: 'usd',
      token: request.body.payment_data.instrument.credential.token,
      idempotencyKey: randomUUID(),
      metadata: {},
    });
    return { status: outcome.status === 'succeeded' ? 'completed' : 'ready_for_payment' };
  },
);
console.log(await bare.listen({ host: '127.0.0.1', port: 0 }));
process.on('SIGTERM', () => void bare.close().then(() => process.exit(0)));
