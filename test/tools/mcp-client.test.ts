// db-scope: sqlite

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { main } from '../../scripts/mcp-client/main.ts';
import { createApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { startAppFixture } from '../helpers/web.ts';

function recorder() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (line: string) => out.push(line), err: (line: string) => err.push(line) } };
}

test('npm run mcp-client lists the tools with an API key and through the OAuth flow', async (t) => {
  const fixture = await startAppFixture(t, { listen: true });
  const { workspaceId, invitationPath } = await fixture.provision({ email: 'ci@example.com' });
  const key = await createApiKey(
    fixture.runtime.database.db,
    fixture.runtime.clock,
    { workspaceId, name: 'CI' },
    OPERATOR_SOURCE,
  );
  assert.ok(key.ok);

  const withKey = recorder();
  assert.equal(
    await main(['--base-url', fixture.baseUrl, '--api-key', key.value.key], withKey.io),
    0,
    withKey.err.join('\n'),
  );
  assert.match(withKey.out.join('\n'), /^\d+ tools: getMe /m);
  assert.match(withKey.out.join('\n'), new RegExp(`getMe: .*${workspaceId}`));

  const withOAuth = recorder();
  const code = await main(
    [
      '--base-url',
      fixture.baseUrl,
      '--invitation-url',
      `${fixture.baseUrl}${invitationPath}`,
      '--password',
      'a long enough password for CI',
    ],
    withOAuth.io,
  );
  assert.equal(code, 0, withOAuth.err.join('\n'));
  const said = withOAuth.out.join('\n');
  assert.match(said, /registered as mcpc_/);
  assert.match(said, /consented \(read\)/);
  assert.match(said, /got an access token \(mcp:read\)/);
  assert.match(said, /getMe: /);

  const again = recorder();
  assert.equal(
    await main(
      [
        '--base-url',
        fixture.baseUrl,
        '--email',
        'ci@example.com',
        '--password',
        'a long enough password for CI',
        '--access',
        'write',
      ],
      again.io,
    ),
    0,
    again.err.join('\n'),
  );
  assert.match(again.out.join('\n'), /got an access token \(mcp:read mcp:write\)/);

  const usage = recorder();
  assert.equal(await main(['--base-url', fixture.baseUrl], usage.io), 2);
  const refused = recorder();
  assert.equal(await main(['--base-url', fixture.baseUrl, '--api-key', 'svc_live_nope'], refused.io), 1);
});
