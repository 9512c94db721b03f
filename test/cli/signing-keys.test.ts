// db-scope: both

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { systemClock } from '../../src/shared/clock.ts';
import { createKeyStore } from '../../src/signing/index.ts';
import { createTestDatabase, processDatabaseUrl } from '../helpers/database.ts';

const run = promisify(execFile);
const SECRET = 'signing-keys-test-secret-of-32-bytes-at-least';

async function svc(env: Record<string, string>, ...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, ['src/cli.ts', ...args], {
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('npm run svc -- signing-keys and ucp-platforms', () => {
  it('rotates the signing key with a published grace, sealed under SIGNING_KEYS_SECRET', async (t) => {
    const database = await createTestDatabase({ shared: true });
    t.after(() => database.close());
    const env = { DATABASE_URL: processDatabaseUrl(database), SIGNING_KEYS_SECRET: SECRET };

    assert.match((await svc(env, 'signing-keys', 'list')).stdout, /no signing key yet/);
    const first = await svc(env, 'signing-keys', 'rotate');
    assert.equal(first.code, 0, first.stderr);
    const firstKid = /^(\S+) signs from now on$/m.exec(first.stdout)?.[1];
    assert.ok(firstKid);

    const second = await svc(env, 'signing-keys', 'rotate', '--grace', '10d');
    assert.equal(second.code, 0, second.stderr);
    const secondKid = /^(\S+) signs from now on$/m.exec(second.stdout)?.[1];
    assert.match(second.stdout, new RegExp(`^${firstKid} stays published until \\d{4}-`, 'm'));

    const listed = (await svc(env, 'signing-keys', 'list')).stdout;
    assert.match(listed, new RegExp(`${secondKid}\\s+\\S+\\s+signing`));
    assert.match(listed, new RegExp(`${firstKid}\\s+\\S+\\s+published \\(grace\\)`));

    const store = createKeyStore(database.db, { clock: systemClock, secret: SECRET });
    assert.deepEqual(
      (await store.publishedKeys()).map((key) => key.kid),
      [secondKid, firstKid],
    );
    assert.equal((await store.signingKey()).kid, secondKid);
    const stored = await database.db.selectFrom('signing_keys').select('private_key').execute();
    assert.ok(
      stored.every(
        (row) => !row.private_key.includes('PRIVATE KEY') && row.private_key.startsWith('aes256gcm.'),
      ),
    );
    await assert.rejects(
      createKeyStore(database.db, { clock: systemClock, secret: undefined }).signingKey(),
      /SIGNING_KEYS_SECRET/,
    );

    const short = await svc(env, 'signing-keys', 'rotate', '--grace', '1d');
    assert.equal(short.code, 64);
    assert.match(short.stderr, /--grace must be whole days from 7d/);
  });

  it('registers a platform from its public keys, and refuses private ones', async (t) => {
    const database = await createTestDatabase({ shared: true });
    t.after(() => database.close());
    const env = { DATABASE_URL: processDatabaseUrl(database) };
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-platform-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const publicFile = path.join(dir, 'profile.json');
    writeFileSync(
      publicFile,
      JSON.stringify({ ucp: {}, keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'p1' }] }),
    );
    const privateFile = path.join(dir, 'private.json');
    writeFileSync(
      privateFile,
      JSON.stringify({ keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'p1' }] }),
    );

    const profile = 'https://platform.example/.well-known/ucp';
    const added = await svc(
      env,
      'ucp-platforms',
      'add',
      '--profile',
      profile,
      '--keys',
      publicFile,
      '--order-webhook-url',
      'https://platform.example/hooks/orders',
    );
    assert.equal(added.code, 0, added.stderr);
    assert.match(
      (await svc(env, 'ucp-platforms', 'list')).stdout,
      /platform\.example\/\.well-known\/ucp\s+p1\s+https:\/\/platform\.example\/hooks\/orders/,
    );

    const refused = await svc(env, 'ucp-platforms', 'add', '--profile', profile, '--keys', privateFile);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /private member "d"/);
    assert.equal((await svc(env, 'ucp-platforms', 'remove', '--profile', profile)).code, 0);
    assert.match((await svc(env, 'ucp-platforms', 'list')).stdout, /no UCP platform is registered/);
  });
});
