import type { FastifyInstance } from 'fastify';
import type { ChannelContext } from '../context.ts';

/** ACP 2026-04-17 checkout sessions under /api/acp/checkout_sessions. */
export async function acpChannel(_app: FastifyInstance, _context: ChannelContext): Promise<void> {}
