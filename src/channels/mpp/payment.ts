import { setTimeout as delay } from 'node:timers/promises';
import {
  attemptStatus,
  type Buyer,
  type Order,
  type PurchaseDeps,
  type PurchaseOutcome,
  type PurchaseRequest,
  purchase,
} from '../../purchase/index.ts';
import { sha256Hex } from '../../shared/ids.ts';
import { canonicalJson } from '../../shared/jcs.ts';
import type { PaidRoute } from './challenge.ts';
import { type CredentialSource, readCredential, sharedPaymentToken, verifyChallenge } from './credential.ts';
import type { PaymentRefusal } from './problems.ts';
import type { PurchaseRequestBody } from './schemas.ts';
import { claimChallenge, isClaimed } from './store.ts';

/** What a request to a paid route comes to; the route turns it into 200, 402 or 503. */
export type PaymentAnswer =
  | { kind: 'paid'; order: Order }
  /** 402 with a fresh challenge. */
  | { kind: 'refused'; refusal: PaymentRefusal }
  /** 503: repeating the identical request finishes the purchase without a second charge. */
  | { kind: 'unfinished'; code: string; detail: string; retryAfterSeconds: number };

export interface PaymentDeps {
  purchases: PurchaseDeps;
  secret: string;
}

/** A concurrent identical request waits this long for the first one before answering 503. */
const IN_PROGRESS_POLLS = 60;
const IN_PROGRESS_POLL_MS = 50;

/**
 * Serves one request to a paid route: reads and verifies the credential, claims its challenge id
 * in the database, and only then has the purchase pipeline charge the token, under an attempt key
 * derived from the challenge id so that repeats of the identical request never charge twice.
 */
export async function pay(
  deps: PaymentDeps,
  route: PaidRoute,
  credential: CredentialSource,
  body: PurchaseRequestBody,
): Promise<PaymentAnswer> {
  const reading = readCredential(credential.value);
  if (reading.kind === 'absent') {
    return refused('payment-required', `Payment is required: ${route.description}.`);
  }
  if (reading.kind === 'malformed') {
    return refused(
      'malformed-credential',
      'The credential is not base64url-encoded JSON of the expected shape.',
    );
  }
  const { challenge, payload } = reading.credential;
  const check = verifyChallenge(challenge, route, deps.secret, credential.field);
  if (!check.ok) return refused('invalid-challenge', check.detail);

  const { db, clock } = deps.purchases;
  const now = clock.now().getTime();
  const expiresAt = check.expiresAt.getTime();
  if (now >= expiresAt && !(await isClaimed(db, check.challengeId))) {
    return refused('payment-expired', 'The challenge has expired; pay the new one.');
  }
  const token = sharedPaymentToken(payload);
  if (token === undefined) {
    return refused('invalid-payload', 'The payload must carry the shared payment token as a string `spt`.');
  }
  const claim = {
    challengeId: check.challengeId,
    itemId: route.itemId,
    fingerprint: sha256Hex(canonicalJson({ itemId: route.itemId, body, token })),
    expiresAt,
  };
  if (!(await claimChallenge(db, claim, now))) {
    return refused('invalid-challenge', 'This challenge was already used for another payment.');
  }
  const outcome = await purchaseSettled(deps.purchases, {
    attemptKey: `mpp:${check.challengeId}`,
    channel: 'mpp',
    itemId: route.itemId,
    buyer: buyerFrom(body),
    token,
  });
  return answerFor(outcome);
}

/**
 * Runs the purchase; while an identical request is charging it, waits for that one's outcome by
 * reading the attempt's state (one query per step) until it is no longer pending, then takes the
 * outcome through the pipeline once more. Still pending after the last step, it answers
 * `in_progress` (a 503 the client repeats).
 */
async function purchaseSettled(deps: PurchaseDeps, request: PurchaseRequest): Promise<PurchaseOutcome> {
  const outcome = await purchase(deps, request);
  if (outcome.kind !== 'in_progress') return outcome;
  for (let poll = 0; poll < IN_PROGRESS_POLLS; poll++) {
    await delay(IN_PROGRESS_POLL_MS);
    if ((await attemptStatus(deps.db, request.attemptKey)) !== 'pending') return purchase(deps, request);
  }
  return outcome;
}

function answerFor(outcome: PurchaseOutcome): PaymentAnswer {
  switch (outcome.kind) {
    case 'completed':
      return { kind: 'paid', order: outcome.order };
    case 'declined':
      return outcome.code === 'requires_3ds'
        ? refused('payment-action-required', outcome.message, outcome.code)
        : refused('verification-failed', outcome.message || 'The payment was declined.', outcome.code);
    case 'failed':
      return refused('verification-failed', outcome.message);
    case 'rejected':
      if (outcome.code !== 'attempt_conflict')
        throw new Error(`paid route sells no such item: ${outcome.message}`);
      return refused('invalid-challenge', outcome.message);
    case 'in_progress':
      return unfinished(
        'payment_in_progress',
        'An identical request is still being processed; repeat this request.',
        outcome.retryAfterSeconds,
      );
    case 'payment_unknown':
      return unfinished(
        'payment_pending',
        'The payment provider has not confirmed the payment yet; repeat this exact request. You will not be charged twice.',
        outcome.retryAfterSeconds,
      );
    case 'needs_review':
      return unfinished(
        'payment_under_review',
        'The payment provider did not confirm this payment in time; a person is reviewing it. Do not pay again: it will not be charged twice.',
        REVIEW_RETRY_AFTER_SECONDS,
      );
    case 'setup_pending':
      return unfinished(
        'setup_pending',
        'Payment received; the workspace is still being set up. Repeat this exact request to finish; you will not be charged again.',
        outcome.retryAfterSeconds,
      );
  }
}

/** A reviewed payment is settled by a person, in hours rather than seconds. */
const REVIEW_RETRY_AFTER_SECONDS = 3600;

function buyerFrom(body: PurchaseRequestBody): Buyer {
  const { email, first_name, last_name, full_name, company } = body.buyer;
  const name = full_name ?? ([first_name, last_name].filter(Boolean).join(' ') || undefined);
  return { email, ...(name ? { name } : {}), ...(company?.name ? { companyName: company.name } : {}) };
}

function refused(code: PaymentRefusal['code'], detail: string, declineCode?: string): PaymentAnswer {
  return { kind: 'refused', refusal: { code, detail, ...(declineCode ? { declineCode } : {}) } };
}

function unfinished(code: string, detail: string, retryAfterSeconds: number): PaymentAnswer {
  return { kind: 'unfinished', code, detail, retryAfterSeconds };
}
