import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { ParsedMail } from 'mailparser';
import { createUser, hashPassword } from '../../src/accounts/index.ts';
import { createSmtpTransport } from '../../src/mail/index.ts';
import { startTestRuntime, type TestRuntime } from './runtime.ts';
import { startTestSmtpServer, type TestSmtpServer } from './smtp.ts';
import { freePort, type WebClient, type WebResponse, webClient } from './web.ts';

export const PASSWORD = 'correct horse battery staple';

export interface AccountMailFixture {
  runtime: TestRuntime;
  smtp: TestSmtpServer;
  /** The service's BASE_URL (and, with `listen`, where it listens). */
  baseUrl: string;
  /** A browser's view through `inject`, posting with the service's own Origin. */
  client(): WebClient;
  createAccount(email: string, password?: string): Promise<string>;
  /** A client signed in with the password. */
  signedIn(email: string, password?: string): Promise<WebClient>;
  /** Runs the job queue, then the messages the SMTP peer received for `email`. */
  mailTo(email: string): Promise<ParsedMail[]>;
  /** The path of the newest link matching `pattern` emailed to `email`. */
  latestLinkPath(email: string, pattern: RegExp): Promise<string>;
}

export const SIGN_IN_LINK = /https?:\/\/[^\s"]+\/sign-in\/link\/sil_[A-Za-z0-9_-]{43}/;
export const RESET_LINK = /https?:\/\/[^\s"]+\/password-reset\/link\/pwr_[A-Za-z0-9_-]{43}/;
export const EMAIL_CHANGE_LINK = /https?:\/\/[^\s"]+\/account\/email\/emc_[A-Za-z0-9_-]{43}/;

/** The service on a fresh database with a manual clock, its email going to a real SMTP peer. */
export async function startAccountMailFixture(
  t: TestContext,
  options: { listen?: boolean } = {},
): Promise<AccountMailFixture> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const smtp = await startTestSmtpServer();
  t.after(() => smtp.close());
  const runtime = await startTestRuntime(t, {
    env: { BASE_URL: baseUrl },
    mailTransport: createSmtpTransport(smtp.url),
  });
  if (options.listen) await runtime.app.listen({ port, host: '127.0.0.1' });
  const client = () => webClient(runtime.app, baseUrl);

  async function mailTo(email: string): Promise<ParsedMail[]> {
    await runtime.jobs.drain();
    return smtp.received.filter((mail) =>
      [mail.to ?? []].flat().some((to) => to.value.some((address) => address.address === email)),
    );
  }

  return {
    runtime,
    smtp,
    baseUrl,
    client,
    mailTo,
    async createAccount(email, password = PASSWORD) {
      const created = await createUser(runtime.database.db, runtime.clock, {
        email,
        passwordHash: await hashPassword(password),
      });
      assert.ok(created.ok);
      return created.value.id;
    },
    async signedIn(email, password = PASSWORD) {
      const signedIn = client();
      await signedIn.get('/sign-in');
      const answer = await signedIn.post('/sign-in', { email, password });
      assert.equal(answer.status, 303, `signing in as ${email}`);
      return signedIn;
    },
    async latestLinkPath(email, pattern) {
      const link = (await mailTo(email)).at(-1)?.text?.match(pattern)?.[0];
      assert.ok(link, `no link matching ${pattern} emailed to ${email}`);
      return new URL(link).pathname;
    },
  };
}

/** The error summary of a page, which is all a page says about a failure. */
export function problemOf(page: WebResponse): string {
  return /<div class="error-summary"[\s\S]*?<\/div>/.exec(page.body)?.[0] ?? '';
}

/** Whether the client's session opens an app page (or is sent to sign in). */
export async function isSignedIn(client: WebClient): Promise<boolean> {
  const page = await client.get('/account');
  assert.ok(page.status === 200 || page.status === 303, `unexpected ${page.status}`);
  return page.status === 200;
}
