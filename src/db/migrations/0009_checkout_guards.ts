import { type Kysely, sql } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('checkout_sessions')
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // A session whose latest payment attempt is under way, or finished but not yet applied to the
  // session, is `paying` from now on: nothing may change it until that outcome is applied.
  await sql`
    update checkout_sessions set status = 'paying', version = version + 1
    where status in ('not_ready', 'ready', 'expired')
      and attempt_count > 0
      and exists (
        select 1 from payment_attempts
        where payment_attempts.attempt_key =
          checkout_sessions.channel || ':' || checkout_sessions.id || ':' || checkout_sessions.attempt_count
          and payment_attempts.status in ('pending', 'charged', 'completed')
      )
  `.execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await sql`update checkout_sessions set status = 'ready' where status = 'paying'`.execute(db);
  await db.schema.alterTable('checkout_sessions').dropColumn('version').execute();
}
