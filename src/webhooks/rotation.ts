import { type Static, Type } from 'typebox';
import type { AuditSource } from '../audit/index.ts';
import { inTransaction } from '../db/transaction.ts';
import { DAY_MS } from '../shared/clock.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { notFound, type WebhookDeps, type WebhookError } from './context.ts';
import { newSigningSecret } from './signing.ts';
import {
  lockSubscriptionRow,
  recordSubscriptionEvent,
  toSubscription,
  type WebhookSubscriptionWithSecret,
} from './subscriptions.ts';

/** How long the replaced secret keeps signing, unless the request says otherwise. */
export const DEFAULT_ROTATION_GRACE_MS = DAY_MS;
export const MAX_ROTATION_GRACE_MS = 7 * DAY_MS;

export const RotateSecretBody = Type.Object(
  {
    grace_period_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_ROTATION_GRACE_MS / 1000,
        description:
          'How long the old secret keeps signing beside the new one (default one day, at most seven; ' +
          '0 drops it at once).',
      }),
    ),
  },
  { additionalProperties: false, examples: [{ grace_period_seconds: 3600 }] },
);
export type RotateSecretBody = Static<typeof RotateSecretBody>;

/**
 * Gives the subscription a new secret. During the grace period every attempt is signed with both
 * (new first), so receivers can switch at their own pace; a secret still in its grace period from
 * an earlier rotation is dropped. The subscription is read locked, so rotations at the same time
 * take turns: each replaces the secret the one before it answered, which keeps its grace.
 */
export async function rotateSecret(
  deps: Pick<WebhookDeps, 'db' | 'clock'>,
  workspaceId: string,
  id: string,
  body: RotateSecretBody,
  source: AuditSource,
): Promise<Result<WebhookSubscriptionWithSecret, WebhookError>> {
  const graceMs = (body.grace_period_seconds ?? DEFAULT_ROTATION_GRACE_MS / 1000) * 1000;
  return inTransaction(deps.db, async (trx) => {
    const existing = await lockSubscriptionRow(trx, workspaceId, id);
    if (!existing) return err(notFound);
    const now = deps.clock.now();
    const changes = {
      secret: newSigningSecret(),
      previous_secret: graceMs > 0 ? existing.secret : null,
      previous_secret_expires_at: graceMs > 0 ? now.getTime() + graceMs : null,
      updated_at: now.getTime(),
    };
    await trx
      .updateTable('webhook_subscriptions')
      .set(changes)
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .execute();
    await recordSubscriptionEvent(trx, 'webhook.secret_rotated', existing, source, now);
    return ok({ ...toSubscription({ ...existing, ...changes }, now), secret: changes.secret });
  });
}
