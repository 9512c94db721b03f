import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DAY_MS } from '../../src/shared/clock.ts';
import { endElapsedTerms } from '../../src/workspace/index.ts';
import { assertAccessible, collectConsoleErrors, launchBrowser } from '../helpers/browser.ts';
import { testDialect } from '../helpers/database.ts';
import { acceptAsNewAccount, startAppFixture, webClient } from '../helpers/web.ts';

const errorCodeOf = (body: string) => /<meta name="error-code" content="([a-z_]+)">/.exec(body)?.[1];

describe(`the Billing placeholder on ${testDialect}`, () => {
  it('shows owners and admins the plan, the term and that it does not renew; members get 403, others 404', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, invitationPath } = await fixture.provision({
      email: 'owner@example.com',
      name: 'Acme',
    });
    const owner = await acceptAsNewAccount(fixture.runtime.app, invitationPath);
    const billing = `/w/${workspaceId}/billing`;

    const page = await owner.get(billing);
    assert.equal(page.status, 200);
    assert.match(page.body, /<h1>Acme: Billing<\/h1>/);
    assert.match(page.body, /<dt>Plan<\/dt><dd>Pro<\/dd>/);
    assert.match(page.body, /<time datetime="2027-03-01T12:00:00.000Z">/);
    assert.match(page.body, /does not renew/);

    for (const [email, role] of [
      ['admin@example.com', 'admin'],
      ['member@example.com', 'member'],
    ] as const) {
      await owner.get(`/w/${workspaceId}/members`);
      const sent = await owner.post(`/w/${workspaceId}/members/invitations`, { email, role });
      assert.equal(sent.status, 303, sent.body);
    }
    const admin = await acceptAsNewAccount(
      fixture.runtime.app,
      await fixture.latestInvitationPath('admin@example.com'),
    );
    const member = await acceptAsNewAccount(
      fixture.runtime.app,
      await fixture.latestInvitationPath('member@example.com'),
    );
    assert.equal((await admin.get(billing)).status, 200);
    const refused = await member.get(billing);
    assert.equal(refused.status, 403);
    assert.ok(errorCodeOf(refused.body));
    const other = await fixture.provision({ email: 'other@example.com' });
    assert.equal((await owner.get(`/w/${other.workspaceId}/billing`)).status, 404);
    const anonymous = await webClient(fixture.runtime.app).get(billing);
    assert.equal(anonymous.status, 303);

    fixture.runtime.clock.advance(366 * DAY_MS);
    await endElapsedTerms(fixture.runtime.database.db, {
      clock: fixture.runtime.clock,
      baseUrl: fixture.runtime.config.baseUrl,
    });
    const again = webClient(fixture.runtime.app);
    await again.get('/sign-in');
    await again.post('/sign-in', { email: 'owner@example.com', password: 'correct horse battery staple' });
    const free = await again.get(billing);
    assert.match(free.body, /<dt>Plan<\/dt><dd>Free<\/dd>/);
    assert.match(free.body, /on the Free plan, with no paid term/);
  });

  it('passes axe on a phone', async (t) => {
    const browser = await launchBrowser(t, { viewport: { width: 390, height: 844 } });
    const fixture = await startAppFixture(t, { listen: true });
    const page = await browser.newPage();
    const consoleErrors = collectConsoleErrors(page);
    const { workspaceId, invitationPath } = await fixture.provision({
      email: 'ada@example.com',
      name: 'Acme',
    });
    await page.goto(`${fixture.baseUrl}${invitationPath}`);
    await page.getByLabel('New password').fill('correct horse battery staple');
    await page.getByRole('button', { name: 'Accept and open the workspace' }).click();
    await page.waitForURL(`${fixture.baseUrl}/w/${workspaceId}`);
    await page.goto(`${fixture.baseUrl}/w/${workspaceId}/billing`);
    await page.getByRole('heading', { name: 'Acme: Billing' }).waitFor();
    await assertAccessible(page);
    assert.deepEqual(consoleErrors, []);
  });
});
