export { type EventOutcome, handleProviderEvent, providerEventRoutes } from './events.ts';
export {
  type BillingCheckout,
  type BillingDeps,
  type BillingLogger,
  type FulfilError,
  type Fulfilment,
  findWorkspaceCheckout,
  fulfilCheckout,
  markCheckoutExpired,
  type ReturnOutcome,
  type StartCheckoutError,
  type StartCheckoutInput,
  settleReturn,
  startCheckout,
} from './service.ts';
