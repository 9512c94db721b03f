import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { ErrorSurface } from '../http/errors.ts';
import type { KeyStore } from '../signing/index.ts';
import type { ChannelContext } from './context.ts';

/**
 * A checkout protocol as the app mounts it. Each channel exports one; the app's list of them is the
 * one place a protocol is added.
 */
export interface ProtocolChannel {
  /** Where its routes live; every answer under it (404 and 405 included) is in its error format. */
  prefix: string;
  /** Registers the routes, under `prefix`. */
  routes(app: FastifyInstance, context: ChannelContext): Promise<void>;
  errors: ErrorSurface;
  /** A JSON null in a request body counts as the field left out (how the protocol's clients send unset fields). */
  nullAsAbsent: boolean;
  /** Registers the protocol's discovery documents, at the root. */
  discovery(app: FastifyInstance, context: { config: Config; signingKeys: KeyStore }): void;
}
