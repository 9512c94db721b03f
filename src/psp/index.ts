export type { ChargeOutcome, ChargeRequest, PaymentIntentSummary, PaymentProvider } from './port.ts';
export { type RunningPspSandbox, sandboxDataFile, startPspSandbox } from './sandbox/main.ts';
export { createStripeAdapter, type StripeAdapterOptions } from './stripe-adapter.ts';
