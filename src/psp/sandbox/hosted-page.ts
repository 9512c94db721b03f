import type { FastifyInstance, FastifyReply } from 'fastify';
import { escapeHtml } from '../../shared/html.ts';
import {
  type CheckoutSessions,
  HOSTED_PAGE_PATH,
  isEmailAddress,
  successRedirect,
} from './checkout-sessions.ts';
import { bodyParams, readString } from './form.ts';
import type { CheckoutSessionRecord } from './state.ts';
import { findTestPaymentMethod, testPaymentMethodForCardNumber } from './test-cards.ts';

const AUTHENTICATION_FAILED =
  'We are unable to authenticate your payment method. Please choose a different payment method and try again.';

/** What a person may type on the page, and what each card does (docs.stripe.com/testing). */
const TEST_CARDS: readonly { readonly number: string; readonly result: string }[] = [
  { number: '4242 4242 4242 4242', result: 'Payment succeeds' },
  { number: '4000 0000 0000 0002', result: 'Declined (generic decline)' },
  { number: '4000 0000 0000 9995', result: 'Declined (insufficient funds)' },
  { number: '4000 0027 6000 3184', result: '3-D Secure authentication required' },
];

const STYLE = `
  body { font-family: system-ui, sans-serif; color: #1a1a1a; background: #f4f5f7; margin: 0; line-height: 1.5; }
  main { max-width: 34rem; margin: 2rem auto; background: #fff; padding: 1.5rem 2rem; border-radius: 8px; }
  .mode { display: inline-block; background: #fff3cd; color: #5c4400; padding: 0.1rem 0.5rem; border-radius: 4px; font-size: 0.875rem; }
  h1 { font-size: 1.5rem; margin: 0.5rem 0 1rem; }
  h2 { font-size: 1.125rem; margin: 1.5rem 0 0.5rem; }
  ul.items { list-style: none; padding: 0; margin: 0; }
  ul.items li { border-bottom: 1px solid #d0d4da; padding: 0.5rem 0; }
  .total { font-weight: 600; }
  label { display: block; font-weight: 600; margin-top: 1rem; }
  input { font: inherit; width: 100%; box-sizing: border-box; padding: 0.5rem; border: 1px solid #6b7280; border-radius: 4px; }
  button { font: inherit; margin-top: 1.25rem; padding: 0.6rem 1.5rem; border: 0; border-radius: 4px; background: #0b5cad; color: #fff; cursor: pointer; }
  button.secondary { background: #fff; color: #0b5cad; border: 1px solid #0b5cad; margin-left: 0.5rem; }
  [role=alert] { background: #fdecea; color: #8a1c1c; border: 1px solid #8a1c1c; border-radius: 4px; padding: 0.75rem; margin: 1rem 0; }
  table { border-collapse: collapse; width: 100%; margin-top: 0.5rem; }
  caption { text-align: left; font-weight: 600; }
  th, td { text-align: left; padding: 0.35rem 0.5rem 0.35rem 0; border-bottom: 1px solid #d0d4da; }
  code { font-size: 1rem; white-space: nowrap; }
  a { color: #0b5cad; }
  .hint { color: #4b5563; font-size: 0.875rem; margin: 0.25rem 0 0; }
`;

interface IdParams {
  readonly id: string;
}

/**
 * The hosted checkout page a buyer's browser is sent to (`session.url`): no API key, no script,
 * plain forms. Cards are the sandbox's test cards; approving one completes the session.
 */
export function registerHostedPageRoutes(app: FastifyInstance, sessions: CheckoutSessions): void {
  app.get<{ Params: IdParams }>(`${HOSTED_PAGE_PATH}/:id`, async (request, reply) => {
    const record = sessions.find(request.params.id);
    if (!record) return sendPage(reply, 404, notFoundPage());
    if (record.session.status !== 'open') return sendPage(reply, 200, settledPage(record));
    return sendPage(reply, 200, payPage(record, { email: record.session.customer_email ?? '' }));
  });

  app.post<{ Params: IdParams }>(`${HOSTED_PAGE_PATH}/:id`, async (request, reply) => {
    const record = sessions.find(request.params.id);
    if (!record) return sendPage(reply, 404, notFoundPage());
    if (record.session.status !== 'open') return sendPage(reply, 200, settledPage(record));
    const params = bodyParams(request.body);
    const email = (readString(params.email, 'email') ?? record.session.customer_email ?? '').trim();
    const cardNumber = readString(params.card_number, 'card_number') ?? '';
    if (!isEmailAddress(email)) {
      return sendPage(reply, 422, payPage(record, { email, alert: 'Your email address is invalid.' }));
    }
    const testPaymentMethodId = testPaymentMethodForCardNumber(cardNumber);
    const outcome = testPaymentMethodId && findTestPaymentMethod(testPaymentMethodId)?.outcome;
    if (!testPaymentMethodId || !outcome) {
      return sendPage(reply, 422, payPage(record, { email, alert: 'Your card number is invalid.' }));
    }
    switch (outcome.kind) {
      case 'approve':
        return reply.redirect(successRedirect(sessions.complete(record, email).session), 303);
      case 'authenticate':
        sessions.awaitAuthentication(record, testPaymentMethodId, email);
        return reply.redirect(authenticatePath(record), 303);
      case 'decline':
        return sendPage(reply, 200, payPage(record, { email, alert: outcome.message }));
    }
  });

  app.get<{ Params: IdParams }>(`${HOSTED_PAGE_PATH}/:id/authenticate`, async (request, reply) => {
    const record = sessions.find(request.params.id);
    if (!record) return sendPage(reply, 404, notFoundPage());
    if (record.session.status !== 'open') return sendPage(reply, 200, settledPage(record));
    if (!record.pendingAuthentication) return reply.redirect(payPath(record), 303);
    return sendPage(reply, 200, authenticatePage(record));
  });

  app.post<{ Params: IdParams }>(`${HOSTED_PAGE_PATH}/:id/authenticate`, async (request, reply) => {
    const record = sessions.find(request.params.id);
    if (!record) return sendPage(reply, 404, notFoundPage());
    if (record.session.status !== 'open') return sendPage(reply, 200, settledPage(record));
    const pending = record.pendingAuthentication;
    if (!pending) return reply.redirect(payPath(record), 303);
    if (readString(bodyParams(request.body).outcome, 'outcome') === 'complete') {
      return reply.redirect(successRedirect(sessions.complete(record, pending.email).session), 303);
    }
    sessions.abandonAuthentication(record);
    return sendPage(reply, 200, payPage(record, { email: pending.email, alert: AUTHENTICATION_FAILED }));
  });
}

function payPath(record: CheckoutSessionRecord): string {
  return `${HOSTED_PAGE_PATH}/${encodeURIComponent(record.session.id)}`;
}

function authenticatePath(record: CheckoutSessionRecord): string {
  return `${payPath(record)}/authenticate`;
}

function sendPage(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header(
      'content-security-policy',
      // No form-action: browsers apply it to the redirect after paying, which leaves this origin. The
      // empty data: icon keeps browsers from asking for /favicon.ico, which needs the secret key.
      "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; frame-ancestors 'none'",
    )
    .send(html);
}

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · PSP sandbox</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<main>
<p class="mode">PSP sandbox · test mode, no real money moves</p>
${body}
</main>
</body>
</html>
`;
}

interface PayPageState {
  readonly email: string;
  readonly alert?: string | undefined;
}

function payPage(record: CheckoutSessionRecord, { email, alert }: PayPageState): string {
  const { session, lineItems } = record;
  const total = formatAmount(session.amount_total, session.currency);
  const items = lineItems
    .map((item) => {
      const description = item.description === null ? '' : `<br>${escapeHtml(item.description)}`;
      const quantity = item.quantity === 1 ? '' : ` × ${item.quantity}`;
      const amount = formatAmount(item.unitAmount * item.quantity, session.currency);
      return `<li><strong>${escapeHtml(item.name)}</strong>${escapeHtml(quantity)}${description}<br>${escapeHtml(amount)}</li>`;
    })
    .join('\n');
  const cards = TEST_CARDS.map(
    (card) => `<tr><td><code>${escapeHtml(card.number)}</code></td><td>${escapeHtml(card.result)}</td></tr>`,
  ).join('\n');
  const cancel =
    session.cancel_url === null
      ? ''
      : `<p><a href="${escapeHtml(session.cancel_url)}">Cancel and return</a></p>`;
  return layout(
    `Pay ${total}`,
    `<h1>Pay ${escapeHtml(total)}</h1>
<h2>Order summary</h2>
<ul class="items">
${items}
</ul>
<p class="total">Total due: ${escapeHtml(total)}</p>
${alert === undefined ? '' : `<div role="alert">${escapeHtml(alert)}</div>`}
<h2>Payment details</h2>
<form method="post" action="${escapeHtml(payPath(record))}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" required value="${escapeHtml(email)}">
<label for="card_number">Card number</label>
<input id="card_number" name="card_number" inputmode="numeric" autocomplete="cc-number" required aria-describedby="card-hint">
<p class="hint" id="card-hint">Type one of the test cards below; any expiry date and CVC apply.</p>
<button type="submit">Pay</button>
</form>
<table>
<caption>Test cards</caption>
<thead><tr><th scope="col">Card number</th><th scope="col">What happens</th></tr></thead>
<tbody>
${cards}
</tbody>
</table>
${cancel}`,
  );
}

function authenticatePage(record: CheckoutSessionRecord): string {
  const total = formatAmount(record.session.amount_total, record.session.currency);
  return layout(
    'Authenticate your payment',
    `<h1>Authenticate your payment</h1>
<p>Your card issuer asks you to confirm the payment of ${escapeHtml(total)}. In the sandbox you choose how
the 3-D Secure check ends.</p>
<form method="post" action="${escapeHtml(authenticatePath(record))}">
<button type="submit" name="outcome" value="complete">Complete authentication</button>
<button type="submit" name="outcome" value="fail" class="secondary">Fail authentication</button>
</form>`,
  );
}

function settledPage(record: CheckoutSessionRecord): string {
  const { session } = record;
  if (session.status === 'complete') {
    return layout(
      'Payment complete',
      `<h1>Payment complete</h1>
<p>This checkout has been paid.</p>
<p><a href="${escapeHtml(successRedirect(session))}">Return to the merchant</a></p>`,
    );
  }
  const back =
    session.cancel_url === null
      ? ''
      : `<p><a href="${escapeHtml(session.cancel_url)}">Return to the merchant</a></p>`;
  return layout(
    'Checkout expired',
    `<h1>This checkout has expired</h1>
<p>It can no longer be paid. Start again from the merchant's site.</p>
${back}`,
  );
}

function notFoundPage(): string {
  return layout(
    'Checkout not found',
    '<h1>Checkout not found</h1>\n<p>There is no checkout at this address.</p>',
  );
}

function formatAmount(amount: number, currency: string): string {
  const format = new Intl.NumberFormat('en-US', { style: 'currency', currency: currency.toUpperCase() });
  const fractionDigits = format.resolvedOptions().maximumFractionDigits ?? 2;
  return format.format(amount / 10 ** fractionDigits);
}
