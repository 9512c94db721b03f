export type { SessionStatus } from './checkout.table.ts';
export { completeSession } from './completing.ts';
export type {
  Channel,
  CheckoutDeps,
  CheckoutError,
  CheckoutSession,
  SessionBuyer,
} from './rows.ts';
export {
  cancelSession,
  createSession,
  getSession,
  SESSION_LIFETIME_MS,
  type SessionChanges,
  updateSession,
} from './sessions.ts';
export { expireSessions, settleSessions } from './sweeps.ts';
export { checkoutWiring } from './wiring.ts';
