import type { FastifyInstance } from 'fastify';
import type { ChannelContext } from '../context.ts';

/** UCP 2026-08-25 checkout sessions under /api/ucp/v1/checkout-sessions. */
export async function ucpChannel(_app: FastifyInstance, _context: ChannelContext): Promise<void> {}
