import type { AuditAction } from '../audit/index.ts';
import type { Tx } from '../db/schema.ts';

/** A change to an account the audit log keeps (a password, an address, a passkey). */
export interface AccountChange {
  action: AuditAction;
  /** The account as it was before the change. */
  account: { id: string; email: string };
  /** What the change was done to; the account itself (labelled with its address) when absent. */
  target?: { type: string; id: string; label: string };
}

/**
 * Writes an account change to the audit log in the change's own transaction, so both commit or
 * neither does. The caller supplies it: the app records the change in each workspace the account
 * belongs to, which accounts/ does not know.
 */
export type RecordAccountChange = (trx: Tx, change: AccountChange) => Promise<void>;
