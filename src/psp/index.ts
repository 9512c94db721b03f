export type {
  ChargeOutcome,
  ChargeRequest,
  CheckoutProvider,
  CheckoutSessionRequest,
  CheckoutSessionSummary,
  PaymentIntentSummary,
  PaymentProvider,
  VerifiedEvent,
} from './port.ts';
export { ProviderUnavailableError } from './port.ts';
export { type RunningPspSandbox, sandboxDataFile, startPspSandbox } from './sandbox/main.ts';
export { createStripeAdapter, type StripeAdapterOptions } from './stripe-adapter.ts';
