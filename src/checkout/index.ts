export type { SessionStatus } from './checkout.table.ts';
export {
  type Channel,
  type CheckoutDeps,
  type CheckoutError,
  type CheckoutSession,
  cancelSession,
  completeSession,
  createSession,
  expireSessions,
  getSession,
  SESSION_LIFETIME_MS,
  type SessionBuyer,
  type SessionChanges,
  settleSessions,
  updateSession,
} from './service.ts';
export { checkoutWiring } from './wiring.ts';
