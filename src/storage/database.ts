import { Readable } from 'node:stream';
import type { Db } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import type { Clock } from '../shared/clock.ts';
import { checkedName } from './names.ts';
import { CHUNK_BYTES, type FileStore, type StoredObject } from './port.ts';

const LIST_PAGE = 500;

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

  return {
    kind: 'database',
    async writePending(name, source) {
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
    },
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
