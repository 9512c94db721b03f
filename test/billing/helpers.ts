import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { DAY_MS } from '../../src/shared/clock.ts';
import { endElapsedTerms } from '../../src/workspace/index.ts';
import {
  startWebFixture,
  type WebClient,
  type WebFixture,
  type WebResponse,
  webClient,
} from '../helpers/web.ts';

export const SUCCESS_CARD = '4242 4242 4242 4242';
export const DECLINE_CARD = '4000 0000 0000 0002';

export interface BillingScene {
  fixture: WebFixture;
  owner: WebClient;
  workspaceId: string;
}

/**
 * A workspace bought through ACP (`itemId`) whose owner accepted the invitation; the sandbox
 * delivers its checkout events to the service. With `termEnded`, the clock has moved past the
 * term and the sweep has moved the workspace to Free.
 */
export async function billingScene(
  t: TestContext,
  options: { itemId?: string; termEnded?: boolean } = {},
): Promise<BillingScene> {
  const fixture = await startWebFixture(t, { pspEvents: true });
  const { invitationUrl, workspaceId } = await fixture.buyWorkspace(
    'owner@example.com',
    options.itemId ?? 'svc-starter-monthly',
  );
  let owner = webClient(fixture.runtime.app, fixture.baseUrl);
  const path = new URL(invitationUrl).pathname;
  assert.equal((await owner.get(path)).status, 200);
  const accepted = await owner.post(`${path}/accept`, { password: 'correct horse battery staple' });
  assert.equal(accepted.status, 303, accepted.body);
  if (options.termEnded) {
    fixture.clock.advance(40 * DAY_MS);
    await endElapsedTerms(fixture.runtime.database.db, {
      clock: fixture.clock,
      baseUrl: fixture.runtime.config.baseUrl,
    });
    owner = await ownerSignsInAgain(fixture);
  }
  return { fixture, owner, workspaceId };
}

/** After the clock has moved on past the session's end, the owner signs in again. */
export async function ownerSignsInAgain(fixture: WebFixture): Promise<WebClient> {
  const owner = webClient(fixture.runtime.app, fixture.baseUrl);
  await owner.get('/sign-in');
  const signedIn = await owner.post('/sign-in', {
    email: 'owner@example.com',
    password: 'correct horse battery staple',
  });
  assert.equal(signedIn.status, 303, signedIn.body);
  return owner;
}

/** The owner chooses an item on Billing; answers the provider's page and checkout id. */
export async function startBuying(
  scene: BillingScene,
  itemId = 'svc-pro-annual',
): Promise<{ payUrl: string; checkoutId: string }> {
  const billing = `/w/${scene.workspaceId}/billing`;
  assert.equal((await scene.owner.get(billing)).status, 200);
  const started = await scene.owner.post(`${billing}/checkout`, { item: itemId });
  assert.equal(started.status, 303, started.body);
  const payUrl = started.location ?? '';
  const checkoutId = /cs_test_[A-Za-z0-9]+/.exec(payUrl)?.[0];
  assert.ok(checkoutId, `no checkout in ${payUrl}`);
  return { payUrl, checkoutId };
}

/**
 * The whole purchase on Billing: chooses the plan term, pays on the provider's page, lets the
 * provider's events arrive and follows the way back; answers the return page.
 */
export async function buyAndReturn(scene: BillingScene, itemId: string): Promise<WebResponse> {
  const { payUrl } = await startBuying(scene, itemId);
  const back = new URL((await payOnHostedPage(payUrl)).headers.get('location') ?? '');
  await scene.fixture.sandbox.events.flush();
  return scene.owner.get(back.pathname + back.search);
}

/** Pays on the sandbox's hosted page; answers where it sends the person (the success URL when paid). */
export async function payOnHostedPage(payUrl: string, card = SUCCESS_CARD): Promise<Response> {
  return fetch(payUrl, {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({ email: 'owner@example.com', card_number: card }),
  });
}

/** What fulfilment wrote for the workspace: orders, terms, purchase audit events. */
export async function fulfilmentCounts(scene: BillingScene) {
  const db = scene.fixture.runtime.database.db;
  const count = async (query: Promise<{ n: string | number | bigint }>) => Number((await query).n);
  return {
    appOrders: await count(
      db
        .selectFrom('orders')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_id', '=', scene.workspaceId)
        .where('channel', '=', 'app')
        .executeTakeFirstOrThrow(),
    ),
    terms: await count(
      db
        .selectFrom('workspace_terms')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_id', '=', scene.workspaceId)
        .where('channel', '=', 'app')
        .executeTakeFirstOrThrow(),
    ),
    purchasedEvents: await count(
      db
        .selectFrom('audit_events')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_id', '=', scene.workspaceId)
        .where('action', '=', 'plan.purchased')
        .where('actor_user_id', 'is not', null)
        .executeTakeFirstOrThrow(),
    ),
  };
}
