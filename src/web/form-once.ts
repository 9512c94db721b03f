import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { checkIdempotencyKey, runIdempotently } from '../idempotency/index.ts';
import { field } from './forms.ts';
import type { RouteDeps } from './routes/deps.ts';

/**
 * The hidden field of a form whose sending creates something shown once (an API key, a webhook
 * subscription with its secret). Each page render gives it a new value; a reload of the answer
 * page, or a second click that got past the button's guard, sends the same value again.
 */
export const FORM_ID_FIELD = 'form_id';

export function newFormId(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * `sent_before`: the form id was used; `finished` tells a sending that is done from one still
 * under way (two sent at once), whose outcome (made, or refused) is not known yet.
 */
export type FormOnce<R> = { kind: 'ran'; result: R } | { kind: 'sent_before'; finished: boolean };

/**
 * What to tell a person whose form was sent before: `whenFinished` once the first sending is done,
 * else that it is still under way (two sent at once), since whether it made anything is not known.
 */
export function sentBeforeMessage(once: { finished: boolean }, whenFinished: string): string {
  return once.finished
    ? whenFinished
    : 'This form was sent twice at once, and the first sending is still under way. Reload the page in a moment to see what it did.';
}

/**
 * Runs `create` once per form id (the idempotency store, so across instances): the same form sent
 * again is answered `sent_before` instead of creating a second thing. A refusal (`succeeded`
 * false) frees the id, so the corrected form may be sent again; a form changed since (the back
 * button, then another address) is another request and runs. A form without an id (made by hand)
 * simply runs.
 */
export async function onceForForm<R>(
  deps: RouteDeps,
  request: FastifyRequest,
  scope: string,
  create: () => Promise<R>,
  succeeded: (result: R) => boolean,
): Promise<FormOnce<R>> {
  const formId = field(request, FORM_ID_FIELD);
  if (checkIdempotencyKey(formId) !== undefined) return { kind: 'ran', result: await create() };
  const { _csrf: _token, [FORM_ID_FIELD]: _id, ...fields } = (request.body ?? {}) as Record<string, unknown>;
  let result: { value: R } | undefined;
  const outcome = await runIdempotently(
    { db: deps.db, clock: deps.clock, staleAfterMs: deps.config.idempotency.staleAfterMs },
    { scope: `web.${scope}`, key: formId, body: fields },
    async () => {
      result = { value: await create() };
      return succeeded(result.value) ? { status: 201, body: null } : { status: 400, body: null, keep: false };
    },
  );
  if (outcome.kind === 'fresh' && result) return { kind: 'ran', result: result.value };
  if (outcome.kind === 'conflict') return { kind: 'ran', result: await create() };
  return { kind: 'sent_before', finished: outcome.kind !== 'in_flight' };
}
