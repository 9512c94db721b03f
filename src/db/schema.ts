import type { Kysely, Transaction } from 'kysely';

/**
 * Every table of the service. Empty here: each module declares its own tables into it from its
 * `*.table.ts` (`declare module '../db/schema.ts' { interface Database { ... } }`), so the database
 * type is assembled without db/ importing any module. Every file tsc compiles sees every declaration.
 */
// biome-ignore lint/suspicious/noEmptyInterface: the modules' table files augment it
export interface Database {}

export type Db = Kysely<Database>;
/** A function that takes `Tx` must run inside a transaction; one that takes `Db` accepts either. */
export type Tx = Transaction<Database>;
