import type { Kysely } from 'kysely';

/**
 * The risk treatment plan of ISO 27001 6.1.3 on each risk (the plan, the residual rating expected
 * after it, its due date and the Annex A controls that treat the risk, linked like evidence), and a
 * vendor's owner and next review date.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  // One statement per column: SQLite adds one column per ALTER TABLE.
  await db.schema.alterTable('risks').addColumn('treatment_plan', 'text').execute();
  await db.schema.alterTable('risks').addColumn('residual_likelihood', 'integer').execute();
  await db.schema.alterTable('risks').addColumn('residual_impact', 'integer').execute();
  await db.schema.alterTable('risks').addColumn('due_date', 'text').execute();
  await db.schema
    .createTable('risk_controls')
    .addColumn('risk_id', 'text', (c) => c.notNull().references('risks.id').onDelete('cascade'))
    .addColumn('control_id', 'text', (c) => c.notNull().references('controls.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('risk_controls_pk', ['risk_id', 'control_id'])
    .execute();
  // "Risks a control treats": the list filter, and the cascade when a control goes.
  await db.schema
    .createIndex('risk_controls_by_control')
    .on('risk_controls')
    .columns(['control_id', 'risk_id'])
    .execute();

  await db.schema
    .alterTable('vendors')
    .addColumn('owner_id', 'text', (c) => c.references('people.id').onDelete('set null'))
    .execute();
  await db.schema.alterTable('vendors').addColumn('next_review_date', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('vendors').dropColumn('next_review_date').execute();
  await db.schema.alterTable('vendors').dropColumn('owner_id').execute();
  await db.schema.dropTable('risk_controls').execute();
  for (const column of ['due_date', 'residual_impact', 'residual_likelihood', 'treatment_plan']) {
    await db.schema.alterTable('risks').dropColumn(column).execute();
  }
}
