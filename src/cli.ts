import { parseArgs } from 'node:util';
import { PLANS, type PlanId, type TermLength } from './catalog/index.ts';
import { ConfigError, loadConfig } from './config.ts';
import { openDatabase } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { inTransaction } from './db/transaction.ts';
import { listDevMailbox } from './mail/index.ts';
import { systemClock } from './shared/clock.ts';
import { newId } from './shared/ids.ts';
import { provisionWorkspace } from './workspace/index.ts';

const USAGE = `Usage: npm run svc -- <command> [options]

Commands:
  migrate                                   apply pending database migrations
  workspaces create --email <email> --plan <free|starter|pro|enterprise|msp> [--term month|year] [--name <name>]
                                            create a workspace and email its owner invitation
  mailbox list [--limit <n>]                list the dev mailbox, newest first (development only)

The database is the one the service uses (DATABASE_URL, or SQLite under ./data/).
Emails queued here are sent by the running service's mail worker.`;

class UsageError extends Error {}

function requireOption(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

async function run(argv: string[]): Promise<void> {
  const [group, action, ...rest] = argv;
  const config = loadConfig();
  const database = openDatabase(config.database);
  try {
    if (group === 'migrate') {
      const applied = await migrateToLatest(database.db);
      console.log(
        applied.length ? `applied ${applied.join(', ')}` : 'nothing to apply; the schema is current',
      );
      return;
    }
    await migrateToLatest(database.db);
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
      if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) throw new UsageError('--email must be an email address');
      const plan = requireOption(values, 'plan');
      if (!(plan in PLANS)) throw new UsageError(`--plan must be one of ${Object.keys(PLANS).join(', ')}`);
      const term = values.term ?? 'month';
      if (term !== 'month' && term !== 'year') throw new UsageError('--term must be month or year');
      const now = systemClock.now();
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
    if (group === 'mailbox' && action === 'list') {
      const { values } = parseArgs({ args: rest, options: { limit: { type: 'string' } } });
      const messages = await listDevMailbox(database.db, Number(values.limit ?? 20));
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

try {
  await run(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError) {
    console.error(`${error.message}\n\n${USAGE}`);
    process.exit(64);
  }
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(78);
  }
  throw error;
}
