import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { ApiKeyInfo, RotateError } from './api-keys/index.ts';
import type { BackupManifest } from './backup/index.ts';
import { describePlanLimit, PLANS, type PlanId, type TermLength, upgradeUrl } from './catalog/index.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { BackupError } from './db/backup.ts';
import { type DatabaseHandle, openDatabase } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import type { Db } from './db/schema.ts';
import { inTransaction } from './db/transaction.ts';
import type { Order } from './purchase/index.ts';
import { DAY_MS, systemClock } from './shared/clock.ts';
import { newId } from './shared/ids.ts';
import type { SigningKeyRecord } from './signing/index.ts';
import type { WorkspaceDetails, WorkspaceSummary } from './workspace/index.ts';

// Each command imports the modules it uses when it runs: importing all of them (the HTTP layer,
// schemas, every domain) took most of a command's time, and the test suite runs the CLI dozens
// of times.
const USAGE = `Usage: npm run svc -- <command> [options]

Commands:
  migrate                                   apply pending database migrations
  workspaces create --email <email> --plan <free|starter|pro|enterprise|msp> [--term month|year] [--name <name>]
                                            create a workspace and email its owner invitation
  workspaces list [--limit <n>] [--email <email>] [--json]
                                            workspaces newest first: plan, term end, owner invitation
  workspaces show <workspace id> [--json]   a workspace's terms, members and invitations
  orders list [--limit <n>] [--workspace <id>] [--json]
                                            orders newest first: channel, item, amount, workspace
  orders show <order id> [--json]           one order with its buyer, payment and term
  mailbox list [--limit <n>]                list the dev mailbox, newest first (development only)
  backup --to <dir>                         back up the database and the evidence files into a new
                                            directory, safe while the service runs
  restore --from <dir>                      restore a backup into an empty database (and evidence store)
  evidence check                            read back every evidence file and compare it with its
                                            recorded size and SHA-256
  api-keys create --workspace <id> [--name <name>]
                                            create an API key; it is printed once and never again
  api-keys list --workspace <id>            list a workspace's keys (prefix and last four only)
  api-keys revoke <key id>                  revoke a key now
  api-keys rotate <key id> [--revoke-old-in <0|30m|24h|7d>]
                                            create a replacement key; the old one stops working
                                            after the given time (at once by default)
  signing-keys list                         the RFC 9421 signing keys: which signs, which are published
  signing-keys rotate [--grace <7d|30d>]    a new key signs from now on; the old ones stay published
                                            (and verifying) for the grace, 7 days by default
  ucp-platforms add --profile <url> --keys <file> [--order-webhook-url <url>]
                                            register a UCP platform: the public keys (JWK Set or its
                                            profile) its signed requests are verified with, and where
                                            its order webhooks go
  ucp-platforms list                        the registered platforms
  ucp-platforms remove --profile <url>      forget a platform

The database is the one the service uses (DATABASE_URL, or SQLite under DATA_DIR, ./data/ by default).
Lists show 20 rows unless --limit says otherwise (at most 1000); --json prints JSON for scripts.
Emails queued here are sent by the running service's mail worker.`;

class UsageError extends Error {}

/** A well-formed command the data refuses (no such record, a plan limit): its reason alone, exit 1. */
class Refusal extends Error {}

function requireOption(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

async function run(argv: string[]): Promise<void> {
  const [group, action, ...rest] = argv;
  const config = loadConfig();
  // A restore starts from no database at all: opening one first would create it.
  if (group === 'restore') return restore(config, argv.slice(1));
  const database = openDatabase(config.database);
  try {
    if (group === 'migrate') {
      const applied = await migrateToLatest(database.db);
      console.log(
        applied.length ? `applied ${applied.join(', ')}` : 'nothing to apply; the schema is current',
      );
      return;
    }
    // A backup takes the database as it is; migrating it is the service's business.
    if (group === 'backup') return await backup(config, database, argv.slice(1));
    await migrateToLatest(database.db);
    if (group === 'evidence' && action === 'check') {
      await checkEvidence(config, database);
      return;
    }
    if (group === 'workspaces' && action === 'create') {
      const { values } = parseArgs({
        args: rest,
        options: {
          email: { type: 'string' },
          plan: { type: 'string' },
          term: { type: 'string' },
          name: { type: 'string' },
        },
      });
      const email = requireOption(values, 'email');
      const { isEmailAddress } = await import('./shared/email.ts');
      if (!isEmailAddress(email)) throw new UsageError('--email must be an email address');
      const plan = requireOption(values, 'plan');
      if (!(plan in PLANS)) throw new UsageError(`--plan must be one of ${Object.keys(PLANS).join(', ')}`);
      const term = values.term ?? 'month';
      if (term !== 'month' && term !== 'year') throw new UsageError('--term must be month or year');
      const now = systemClock.now();
      const { provisionWorkspace } = await import('./workspace/index.ts');
      const { workspace } = await inTransaction(database.db, (trx) =>
        provisionWorkspace(
          trx,
          {
            name: values.name ?? `Workspace for ${email}`,
            plan: plan as PlanId,
            ownerEmail: email,
            term:
              plan === 'free'
                ? undefined
                : {
                    term: term as TermLength,
                    startsAt: now,
                    channel: 'operator',
                    orderId: newId('opord', now),
                  },
          },
          { clock: systemClock, baseUrl: config.baseUrl },
        ),
      );
      console.log(JSON.stringify(workspace, null, 2));
      return;
    }
    if (group === 'workspaces' && (action === 'list' || action === 'show')) {
      await lookUpWorkspaces(database.db, action, rest);
      return;
    }
    if (group === 'orders' && (action === 'list' || action === 'show')) {
      await lookUpOrders(database.db, config, action, rest);
      return;
    }
    if (group === 'api-keys') {
      await apiKeys(database.db, config.baseUrl, action, rest);
      return;
    }
    if (group === 'signing-keys') {
      await signingKeys(database.db, config, action, rest);
      return;
    }
    if (group === 'ucp-platforms') {
      await ucpPlatforms(database.db, action, rest);
      return;
    }
    if (group === 'mailbox' && action === 'list') {
      const { values } = parseArgs({ args: rest, options: { limit: { type: 'string' } } });
      const { listDevMailbox } = await import('./mail/index.ts');
      const messages = await listDevMailbox(database.db, parseLimit(values.limit));
      for (const m of messages) {
        console.log(
          `${new Date(m.received_at).toISOString()}  ${m.to_address}  ${m.subject}\n${m.text_body}\n`,
        );
      }
      if (messages.length === 0) console.log('the dev mailbox is empty');
      return;
    }
    throw new UsageError(
      group ? `unknown command: ${[group, action].filter(Boolean).join(' ')}` : 'no command given',
    );
  } finally {
    await database.close();
  }
}

function evidenceSummary(manifest: BackupManifest, config: Config): string {
  const files = `${manifest.evidenceFiles} evidence files`;
  if (manifest.evidenceBackend === 'local') return `${files} copied`;
  if (manifest.evidenceBackend === 'database') return `${files} inside the database`;
  const bucket = config.evidenceStorage.kind === 's3' ? ` ${config.evidenceStorage.bucket}` : '';
  return `${files} not copied: they stay in S3 bucket${bucket}, whose versioning or replication is their backup`;
}

async function backup(config: Config, database: DatabaseHandle, args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { to: { type: 'string' } } });
  const dir = path.resolve(requireOption(values, 'to'));
  const { takeBackup } = await import('./backup/index.ts');
  const started = performance.now();
  const manifest = await takeBackup(config, database, dir);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const summary = `backed up the ${manifest.database} database (migration ${manifest.migration}) to ${dir} in ${seconds} s; ${evidenceSummary(manifest, config)}`;
  const missing = manifest.missingEvidenceFiles;
  if (missing.length > 0) {
    throw new BackupError(
      `${summary}; but ${missing.length} evidence files it names were gone (deleted while it ran, or lost before; see evidence check): ${missing.join(', ')}`,
    );
  }
  console.log(summary);
}

async function restore(config: Config, args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { from: { type: 'string' } } });
  const dir = path.resolve(requireOption(values, 'from'));
  const { restoreBackup } = await import('./backup/index.ts');
  const { manifest, copiedEvidenceFiles, missingEvidenceFiles } = await restoreBackup(config, dir);
  const copied =
    copiedEvidenceFiles !== undefined
      ? `${copiedEvidenceFiles} evidence files copied to the ${config.evidenceStorage.kind} store`
      : manifest.evidenceBackend === 'database'
        ? 'evidence files are inside the database'
        : manifest.s3
          ? `evidence files stay in S3 bucket ${manifest.s3.bucket}, where the configuration keeps them`
          : 'evidence files are not in the backup (S3, taken before backups named their bucket): restore them from the bucket if needed';
  const summary = `restored the ${manifest.database} backup of ${manifest.createdAt} (migration ${manifest.migration}) from ${dir}; ${copied}`;
  if (missingEvidenceFiles.length > 0) {
    throw new BackupError(
      `${summary}; but the backup lacks the files of ${missingEvidenceFiles.length} evidence: ${missingEvidenceFiles.join(', ')}`,
    );
  }
  console.log(`${summary}. Run evidence check, then start the service (it applies newer migrations).`);
}

async function checkEvidence(config: Config, database: DatabaseHandle): Promise<void> {
  const [{ createFileStore }, { checkEvidenceFiles }] = await Promise.all([
    import('./storage/index.ts'),
    import('./compliance/index.ts'),
  ]);
  const store = await createFileStore(config.evidenceStorage, database.db, systemClock);
  try {
    const { checked, missing, mismatched } = await checkEvidenceFiles(database.db, store);
    for (const id of missing) console.log(`missing     ${id}`);
    for (const id of mismatched) console.log(`mismatched  ${id}`);
    console.log(
      `checked ${checked} evidence files in the ${store.kind} store: ${missing.length} missing, ${mismatched.length} mismatched`,
    );
    if (missing.length + mismatched.length > 0) process.exitCode = 1;
  } finally {
    store.close();
  }
}

const LOOKUP_OPTIONS = {
  limit: { type: 'string' },
  email: { type: 'string' },
  workspace: { type: 'string' },
  json: { type: 'boolean' },
} as const;

function parseLimit(value: string | undefined): number {
  if (value === undefined) return 20;
  const limit = Number(value);
  if (!/^\d{1,4}$/.test(value) || limit < 1 || limit > 1000)
    throw new UsageError('--limit must be a whole number from 1 to 1000');
  return limit;
}

function timestamp(date: Date | null): string {
  return date ? date.toISOString().replace(/\.\d{3}Z$/, 'Z') : '-';
}

function money(amount: number, currency: string): string {
  return `${(amount / 100).toFixed(2)} ${currency.toUpperCase()}`;
}

/** Columns padded to their widest cell, the header first. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  return [header, ...rows]
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

async function lookUpWorkspaces(db: Db, action: 'list' | 'show', args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: LOOKUP_OPTIONS });
  const { describeWorkspace, listWorkspaces } = await import('./workspace/index.ts');
  const now = systemClock.now();
  if (action === 'list') {
    const workspaces = await listWorkspaces(db, now, {
      limit: parseLimit(values.limit),
      email: values.email,
    });
    if (values.json) console.log(JSON.stringify(workspaces, null, 2));
    else console.log(workspaces.length ? workspacesTable(workspaces) : 'no workspaces');
    return;
  }
  const workspaceId = positionals[0];
  if (!workspaceId) throw new UsageError('workspaces show needs a workspace id');
  const workspace = await describeWorkspace(db, now, workspaceId);
  if (!workspace) throw new Refusal(`no workspace ${workspaceId}`);
  console.log(values.json ? JSON.stringify(workspace, null, 2) : workspaceReport(workspace));
}

function workspacesTable(workspaces: WorkspaceSummary[]): string {
  return table(
    ['ID', 'NAME', 'PLAN', 'TERM ENDS', 'OWNER', 'INVITATION', 'CREATED'],
    workspaces.map((w) => [
      w.id,
      w.name,
      w.plan,
      timestamp(w.termEndsAt),
      w.owner?.email ?? '-',
      w.owner?.invitation ?? '-',
      timestamp(w.createdAt),
    ]),
  );
}

function workspaceReport(w: WorkspaceDetails): string {
  const terms = w.terms.map((t) => [
    t.plan,
    t.term,
    timestamp(t.startsAt),
    timestamp(t.endsAt),
    t.endedAt ? `ended ${timestamp(t.endedAt)}` : 'in force',
    t.channel,
    t.orderId,
  ]);
  const members = w.members.map((m) => [m.email, m.role, timestamp(m.joinedAt)]);
  const invitations = w.invitations.map((i) => [
    i.id,
    i.email,
    i.role,
    i.state,
    timestamp(i.createdAt),
    timestamp(i.expiresAt),
  ]);
  return [
    `workspace  ${w.id}`,
    `name       ${w.name}`,
    `plan       ${w.plan}`,
    `created    ${timestamp(w.createdAt)}`,
    '',
    terms.length
      ? table(['TERM PLAN', 'LENGTH', 'STARTS', 'ENDS', 'STATE', 'CHANNEL', 'ORDER'], terms)
      : 'no terms (Free)',
    '',
    members.length ? table(['MEMBER', 'ROLE', 'JOINED'], members) : 'no members yet',
    '',
    invitations.length
      ? table(['INVITATION', 'EMAIL', 'ROLE', 'STATE', 'SENT', 'EXPIRES'], invitations)
      : 'no invitations',
  ].join('\n');
}

async function lookUpOrders(db: Db, config: Config, action: 'list' | 'show', args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: LOOKUP_OPTIONS });
  const { createOrderLinks, getOrder, listOrders, loadOrderLinkSecret } = await import('./purchase/index.ts');
  if (action === 'list') {
    const orders = await listOrders(db, { limit: parseLimit(values.limit), workspaceId: values.workspace });
    if (values.json) console.log(JSON.stringify(orders, null, 2));
    else console.log(orders.length ? ordersTable(orders) : 'no orders');
    return;
  }
  const orderId = positionals[0];
  if (!orderId) throw new UsageError('orders show needs an order id');
  const order = await getOrder(db, orderId);
  if (!order) {
    const { findWorkspaceByOrder } = await import('./workspace/index.ts');
    if (await findWorkspaceByOrder(db, orderId)) {
      throw new Refusal(
        `${orderId} names a term given with workspaces create, not a paid order; see workspaces show`,
      );
    }
    throw new Refusal(`no order ${orderId}`);
  }
  const secret = await loadOrderLinkSecret(db, config.orderLinkSecret, systemClock.now().getTime());
  const pageUrl = createOrderLinks(config.baseUrl, secret).url(order.id);
  console.log(values.json ? JSON.stringify({ ...order, pageUrl }, null, 2) : orderReport(order, pageUrl));
}

function ordersTable(orders: Order[]): string {
  return table(
    ['ID', 'CREATED', 'CHANNEL', 'ITEM', 'AMOUNT', 'WORKSPACE'],
    orders.map((o) => [
      o.id,
      timestamp(o.createdAt),
      o.channel,
      o.itemId,
      money(o.amount, o.currency),
      o.workspaceId,
    ]),
  );
}

function orderReport(o: Order, pageUrl: string): string {
  return [
    `order           ${o.id}`,
    `created         ${timestamp(o.createdAt)}`,
    `channel         ${o.channel}`,
    `item            ${o.itemId} (${o.plan}, one ${o.term})`,
    `amount          ${money(o.amount, o.currency)}`,
    `buyer           ${o.buyerEmail}`,
    `payment intent  ${o.paymentIntentId}`,
    `workspace       ${o.workspaceId}`,
    `term            ${timestamp(o.termStartsAt)} to ${timestamp(o.termEndsAt)}`,
    `order page      ${pageUrl}`,
  ].join('\n');
}

function describeKey(key: ApiKeyInfo): string {
  const lastUsed = `last used ${key.lastUsedAt?.toISOString() ?? 'never'}`;
  let state = `active, ${lastUsed}`;
  if (key.revokedAt) {
    const revoked = key.revokedAt.getTime() <= systemClock.now().getTime();
    state = `${revoked ? 'revoked' : 'stops working'} ${key.revokedAt.toISOString()}, ${lastUsed}`;
  }
  return `${key.id}  ${key.prefix}...${key.lastFour}  "${key.name}"  created ${key.createdAt.toISOString()}  ${state}`;
}

function describeRotateError(error: RotateError, keyId: string, billingUrl: string): string {
  switch (error.code) {
    case 'not_found':
      return `no API key ${keyId}`;
    case 'revoked':
      return `${keyId} is revoked`;
    case 'expired':
      return `${keyId} has expired; create a new key instead`;
    case 'already_rotated':
      return `${keyId} was rotated already and stops working ${error.until.toISOString()}; rotate its successor`;
    case 'plan_limit_reached':
      return `${describePlanLimit(error, billingUrl)} Rotate with --revoke-old-in 0 to replace the key without an overlap.`;
  }
}

const DURATION_UNITS_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `0`, `90s`, `30m`, `24h` or `7d` (at most 90 days), in milliseconds. */
function parseRevokeDelay(value: string, maxMs: number): number {
  const match = /^(\d{1,9})([smhd])?$/.exec(value);
  if (!match) throw new UsageError('--revoke-old-in must look like 0, 30m, 24h or 7d');
  const delayMs = Number(match[1]) * (DURATION_UNITS_MS[match[2] ?? 's'] ?? 1000);
  if (delayMs > maxMs) throw new UsageError('--revoke-old-in must be at most 90d');
  return delayMs;
}

async function apiKeys(db: Db, baseUrl: string, action: string | undefined, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { workspace: { type: 'string' }, name: { type: 'string' }, 'revoke-old-in': { type: 'string' } },
  });
  const [
    { createApiKey, findApiKey, listApiKeys, MAX_ROTATION_OVERLAP_MS, revokeApiKey, rotateApiKey },
    { OPERATOR_SOURCE },
    { getWorkspace },
  ] = await Promise.all([
    import('./api-keys/index.ts'),
    import('./audit/index.ts'),
    import('./workspace/index.ts'),
  ]);
  const clock = systemClock;
  if (action === 'create' || action === 'list') {
    const workspaceId = requireOption(values, 'workspace');
    if (!(await getWorkspace(db, workspaceId))) throw new Refusal(`no workspace ${workspaceId}`);
    if (action === 'list') {
      const keys = await listApiKeys(db, workspaceId);
      console.log(keys.length ? keys.map(describeKey).join('\n') : 'the workspace has no API keys');
      return;
    }
    const created = await createApiKey(
      db,
      clock,
      { workspaceId, name: values.name ?? 'API key' },
      OPERATOR_SOURCE,
    );
    if (!created.ok) {
      if (created.error.code === 'workspace_not_found') throw new Refusal(`no workspace ${workspaceId}`);
      throw new Refusal(describePlanLimit(created.error, upgradeUrl(baseUrl, workspaceId)));
    }
    console.log(
      `${describeKey(created.value.info)}\n\n${created.value.key}\n\nThis is the only time the key is shown; store it now.`,
    );
    return;
  }
  const keyId = positionals[0];
  if (!keyId) throw new UsageError(`api-keys ${action ?? ''} needs a key id`);
  if (action === 'revoke') {
    const revoked = await revokeApiKey(db, clock, keyId, OPERATOR_SOURCE);
    if (!revoked) throw new Refusal(`no API key ${keyId}`);
    console.log(describeKey(revoked));
    return;
  }
  if (action === 'rotate') {
    const graceMs = parseRevokeDelay(values['revoke-old-in'] ?? '0', MAX_ROTATION_OVERLAP_MS);
    const rotated = await rotateApiKey(
      db,
      clock,
      keyId,
      OPERATOR_SOURCE,
      new Date(clock.now().getTime() + graceMs),
    );
    if (!rotated.ok) {
      const workspaceId = (await findApiKey(db, keyId))?.workspaceId ?? '';
      throw new Refusal(describeRotateError(rotated.error, keyId, upgradeUrl(baseUrl, workspaceId)));
    }
    const { old, info, key } = rotated.value;
    console.log(
      `old: ${describeKey(old)}\nnew: ${describeKey(info)}\n\n${key}\n\nThis is the only time the key is shown; store it now.`,
    );
    return;
  }
  throw new UsageError(`unknown command: api-keys ${action ?? ''}`);
}

/** UCP asks a rotated key to stay accepted at least 7 days. */
const MIN_KEY_GRACE_MS = 7 * DAY_MS;

async function signingKeys(
  db: Db,
  config: Config,
  action: string | undefined,
  args: string[],
): Promise<void> {
  const { values } = parseArgs({ args, options: { grace: { type: 'string' } } });
  const { createKeyStore, listSigningKeys } = await import('./signing/index.ts');
  if (action === 'rotate') {
    const match = /^(\d{1,4})d$/.exec(values.grace ?? '7d');
    const graceMs = match ? Number(match[1]) * DAY_MS : Number.NaN;
    if (!(graceMs >= MIN_KEY_GRACE_MS && graceMs <= 365 * DAY_MS)) {
      throw new UsageError('--grace must be whole days from 7d to 365d');
    }
    const store = createKeyStore(db, { clock: systemClock, secret: config.signingKeysSecret });
    const { kid, retired } = await store.rotate(graceMs);
    console.log(`${kid} signs from now on`);
    const until = timestamp(new Date(systemClock.now().getTime() + graceMs));
    for (const old of retired) console.log(`${old} stays published until ${until}`);
    return;
  }
  if (action === 'list') {
    const keys = await listSigningKeys(db);
    const now = systemClock.now().getTime();
    const state = (key: SigningKeyRecord) =>
      key.retiredAt === null
        ? 'signing'
        : key.publishUntil !== null && key.publishUntil.getTime() > now
          ? 'published (grace)'
          : 'withdrawn';
    console.log(
      keys.length
        ? table(
            ['kid', 'created', 'state', 'published until'],
            keys.map((key) => [key.kid, timestamp(key.createdAt), state(key), timestamp(key.publishUntil)]),
          )
        : 'no signing key yet; the service makes one when it first signs',
    );
    return;
  }
  throw new UsageError(`unknown command: signing-keys ${action ?? ''}`);
}

async function ucpPlatforms(db: Db, action: string | undefined, args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      profile: { type: 'string' },
      keys: { type: 'string' },
      'order-webhook-url': { type: 'string' },
    },
  });
  const { listPlatforms, parsePlatformKeys, registerPlatform, removePlatform } = await import(
    './channels/ucp/index.ts'
  );
  if (action === 'add') {
    const profileUrl = requireOption(values, 'profile');
    const keys = parsePlatformKeys(readFileSync(requireOption(values, 'keys'), 'utf8'));
    if (!keys.ok) throw new Refusal(`--keys: ${keys.error}`);
    const added = await registerPlatform(
      db,
      { profileUrl, keys: keys.value, orderWebhookUrl: values['order-webhook-url'] },
      systemClock.now(),
    );
    if (!added.ok) throw new Refusal(added.error);
    console.log(`${added.value.profileUrl}: ${keys.value.map((key) => key.kid).join(', ')}`);
    return;
  }
  if (action === 'list') {
    const platforms = await listPlatforms(db);
    console.log(
      platforms.length
        ? table(
            ['profile', 'keys', 'order webhook'],
            platforms.map((p) => [
              p.profileUrl,
              p.keys.map((key) => key.kid).join(','),
              p.orderWebhookUrl ?? '-',
            ]),
          )
        : 'no UCP platform is registered',
    );
    return;
  }
  if (action === 'remove') {
    const profileUrl = requireOption(values, 'profile');
    if (!(await removePlatform(db, profileUrl))) throw new Refusal(`no platform ${profileUrl}`);
    console.log(`removed ${profileUrl}`);
    return;
  }
  throw new UsageError(`unknown command: ucp-platforms ${action ?? ''}`);
}

try {
  await run(process.argv.slice(2));
} catch (error) {
  // parseArgs refuses an unknown option, a missing value or a stray argument with a TypeError.
  const badArguments = (error as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS_') === true;
  if (error instanceof UsageError || badArguments) {
    console.error(`${(error as Error).message}\n\n${USAGE}`);
    process.exit(64);
  }
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(78);
  }
  if (error instanceof Refusal) {
    console.error(error.message);
    process.exit(1);
  }
  if (error instanceof BackupError) {
    console.error(error.message);
    process.exit(1);
  }
  const [group] = process.argv.slice(2);
  if (group === 'backup' || group === 'restore' || group === 'evidence') {
    // An operator's run (a database that does not answer, a full disk) reads as one line, not a trace.
    const reason = error instanceof Error && error.message ? error.message : String(error);
    console.error(`${group} failed: ${reason.split('\n')[0]}`);
    process.exit(1);
  }
  throw error;
}
