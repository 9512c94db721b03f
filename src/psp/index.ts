export type { ChargeOutcome, ChargeRequest, PaymentIntentSummary, PaymentProvider } from './port.ts';
export { createStripeAdapter, type StripeAdapterOptions } from './stripe-adapter.ts';
