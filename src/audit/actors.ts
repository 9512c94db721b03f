/** Who acted: an account, an API key, or the service itself; `label` is what people are shown. */
export interface AuditActor {
  userId?: string;
  apiKeyId?: string;
  label: string;
}

/** Who asks for an audited change, and from where: what a domain function needs to record it. */
export interface AuditSource {
  actor: AuditActor;
  ip?: string | null;
  userAgent?: string | null;
}

/** The service's own sweeps (a term ending). */
export const SYSTEM_ACTOR: AuditActor = { label: 'System' };
/** Operator commands (`npm run svc -- ...`): run on the service's machine, not by an account. */
export const OPERATOR_SOURCE: AuditSource = { actor: { label: 'Operator (CLI)' } };
/** Someone who tried to sign in and failed: who they are is exactly what is not known. */
export const UNKNOWN_ACTOR: AuditActor = { label: 'Unknown' };

/** A visitor who holds an invitation link but has not signed in: whoever the link was forwarded to. */
export const INVITATION_HOLDER: AuditActor = { label: 'Holder of an invitation link' };

export function userActor(user: { id: string; email: string }): AuditActor {
  return { userId: user.id, label: user.email };
}

export function apiKeyActor(key: { id: string; name: string; prefix: string }): AuditActor {
  return { apiKeyId: key.id, label: `API key “${key.name}” (${key.prefix}…)` };
}

/**
 * A visitor of an order's page (`/orders/{id}?key=...`): whoever holds the link the checkout gave
 * the agent, the agent or anyone it was passed on to; `channel` is the order's.
 */
export function orderLinkHolder(channel: string): AuditActor {
  return { label: `Holder of the order page link (${channel.toUpperCase()} order)` };
}

/** An agent that bought through a checkout channel (`acp`, `ucp`, `mpp`), or an operator. */
export function purchaseActor(channel: string): AuditActor {
  return channel === 'operator'
    ? OPERATOR_SOURCE.actor
    : { label: `Agent checkout (${channel.toUpperCase()})` };
}
