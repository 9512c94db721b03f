import type { RunningPspSandbox, StartPspSandboxOptions } from './sandbox/main.ts';

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
export { sandboxDataFile } from './sandbox/data-file.ts';
export type { RunningPspSandbox, StartPspSandboxOptions } from './sandbox/main.ts';
export { createStripeAdapter, type StripeAdapterOptions } from './stripe-adapter.ts';

/**
 * Starts the PSP sandbox in-process. Its modules (an HTTP server of its own) are loaded only by a
 * process that starts one, not by every process that wires the service.
 */
export async function startPspSandbox(options?: StartPspSandboxOptions): Promise<RunningPspSandbox> {
  return (await import('./sandbox/main.ts')).startPspSandbox(options);
}
