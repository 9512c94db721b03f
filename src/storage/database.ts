import { Readable } from 'node:stream';
import type { Db } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import type { Clock } from '../shared/clock.ts';
import { connectionFailure, type FailureKindOf, withStorageFailures } from './failures.ts';
import { checkedName } from './names.ts';
import { CHUNK_BYTES, type FileStore, type StoredObject } from './port.ts';

const LIST_PAGE = 500;

/** SQLite's primary result codes (the low byte of an extended one). */
const SQLITE_BUSY = 5;
const SQLITE_IOERR = 10;
const SQLITE_FULL = 13;

/**
 * PostgreSQL's SQLSTATEs of a server that cannot take a write for now: out of connections or
 * memory, shutting down or starting up, an I/O error. Class 08 (a broken connection) counts too.
 */
const POSTGRES_UNAVAILABLE: ReadonlySet<unknown> = new Set([
  '53200',
  '53300',
  '57P01',
  '57P02',
  '57P03',
  '58030',
]);

/**
 * The database's disk is full (SQLite's SQLITE_FULL, PostgreSQL's `disk_full`), or the database is
 * out of reach or failing for now: SQLite's file locked past the busy timeout or an I/O error,
 * PostgreSQL's connection refused or broken, or the server shutting down or out of resources.
 */
const databaseFailure: FailureKindOf = (error) => {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, errcode } = error as { code?: unknown; errcode?: unknown };
  if (typeof errcode === 'number') {
    const primary = errcode & 0xff;
    if (primary === SQLITE_FULL) return 'full';
    return primary === SQLITE_BUSY || primary === SQLITE_IOERR ? 'unavailable' : undefined;
  }
  if (code === '53100') return 'full';
  if (POSTGRES_UNAVAILABLE.has(code) || (typeof code === 'string' && code.startsWith('08')))
    return 'unavailable';
  return connectionFailure(error);
};

/**
 * Files in the service's own database, in chunks of 256 KiB, so every instance on one PostgreSQL
 * serves every file with no other server. Each chunk is its own statement: an upload holds no
 * transaction open while its bytes arrive, and a download reads one chunk ahead of the client.
 */
export function createDatabaseStore(db: Db, clock: Clock): FileStore {
  async function removeAll(name: string): Promise<void> {
    await inTransaction(db, async (trx) => {
      await trx.deleteFrom('stored_file_chunks').where('name', '=', name).execute();
      await trx.deleteFrom('stored_files').where('name', '=', name).execute();
    });
  }

  async function writeChunks(name: string, source: Readable): Promise<void> {
    checkedName(name);
    await db
      .insertInto('stored_files')
      .values({ name, state: 'pending', size: 0, created_at: clock.now().getTime() })
      .execute();
    let index = 0;
    let size = 0;
    const write = async (bytes: Buffer) => {
      await db.insertInto('stored_file_chunks').values({ name, chunk_index: index++, bytes }).execute();
      size += bytes.length;
    };
    try {
      let pieces: Buffer[] = [];
      let buffered = 0;
      for await (const piece of source as AsyncIterable<Buffer>) {
        pieces.push(piece);
        buffered += piece.length;
        while (buffered >= CHUNK_BYTES) {
          const all = Buffer.concat(pieces, buffered);
          await write(all.subarray(0, CHUNK_BYTES));
          pieces = [all.subarray(CHUNK_BYTES)];
          buffered -= CHUNK_BYTES;
        }
      }
      if (buffered > 0) await write(Buffer.concat(pieces, buffered));
      await db.updateTable('stored_files').set({ size }).where('name', '=', name).execute();
    } catch (error) {
      await removeAll(name);
      throw error;
    }
  }

  return {
    kind: 'database',
    writePending: (name, source) => withStorageFailures(databaseFailure, () => writeChunks(name, source)),
    async finalize(name) {
      await db
        .updateTable('stored_files')
        .set({ state: 'final' })
        .where('name', '=', checkedName(name))
        .execute();
    },
    async open(name) {
      const file = await db
        .selectFrom('stored_files')
        .select('name')
        .where('name', '=', checkedName(name))
        .executeTakeFirst();
      if (!file) return undefined;
      async function* chunks() {
        for (let index = 0; ; index++) {
          const chunk = await db
            .selectFrom('stored_file_chunks')
            .select('bytes')
            .where('name', '=', name)
            .where('chunk_index', '=', index)
            .executeTakeFirst();
          if (!chunk) return;
          const bytes = chunk.bytes;
          yield Buffer.isBuffer(bytes)
            ? bytes
            : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        }
      }
      return Readable.from(chunks(), { objectMode: false, highWaterMark: CHUNK_BYTES });
    },
    async finalSize(name) {
      const file = await db
        .selectFrom('stored_files')
        .select('size')
        .where('name', '=', checkedName(name))
        .where('state', '=', 'final')
        .executeTakeFirst();
      return file ? Number(file.size) : undefined;
    },
    async remove(name) {
      await removeAll(checkedName(name));
    },
    close() {},
    async *list(): AsyncIterable<StoredObject> {
      let after = '';
      for (;;) {
        const page = await db
          .selectFrom('stored_files')
          .select(['name', 'state', 'created_at'])
          .where('name', '>', after)
          .orderBy('name')
          .limit(LIST_PAGE)
          .execute();
        for (const file of page) {
          yield { name: file.name, pending: file.state === 'pending', writtenAt: Number(file.created_at) };
        }
        const last = page.at(-1);
        if (!last || page.length < LIST_PAGE) return;
        after = last.name;
      }
    },
  };
}
