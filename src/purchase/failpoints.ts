/**
 * Named places in the purchase pipeline, and in the checkout that claims a payment, where tests
 * make the process "die" (to prove that a retry or the recovery job finishes the purchase with
 * one charge) or hold a request (to force one ordering of two racing requests). Production uses
 * `noFailpoints`.
 */
export type FailpointName =
  /** An update or cancel read the open session and decided; its guarded write has not run. */
  | 'before_session_write'
  /** A complete read the session ready; its claim (the guarded write to `paying`) has not run. */
  | 'before_claim'
  /** The session is `paying` and the claimed attempt recorded; the provider has not been called. */
  | 'after_claim'
  /** A complete has the settled outcome of the claimed attempt; the session has not taken it yet. */
  | 'before_session_settled'
  /** The attempt is recorded; the provider has not been called. */
  | 'after_attempt_recorded'
  /** The provider charged; the outcome is not recorded yet. */
  | 'after_charge'
  /** The charge is recorded; provisioning has not started. */
  | 'after_charge_recorded'
  /** Order, workspace, invitation and its email are written but not committed. */
  | 'before_provisioning_commit'
  /** Everything is committed; the caller has not been answered. */
  | 'after_provisioning';

export interface Failpoints {
  hit(name: FailpointName): Promise<void>;
}

export class SimulatedCrash extends Error {
  readonly failpoint: FailpointName;

  constructor(failpoint: FailpointName) {
    super(`simulated crash at ${failpoint}`);
    this.name = 'SimulatedCrash';
    this.failpoint = failpoint;
  }
}

export const noFailpoints: Failpoints = { hit: async () => {} };

/** Throws SimulatedCrash the first time `name` is reached, then lets everything through. */
export function crashOnceAt(name: FailpointName): Failpoints {
  let armed = true;
  return {
    async hit(reached) {
      if (armed && reached === name) {
        armed = false;
        throw new SimulatedCrash(name);
      }
    },
  };
}
