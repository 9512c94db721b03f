import { createReadStream, createWriteStream, type Dirent } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileSystemFailure, withStorageFailures } from './failures.ts';
import { checkedName, PENDING_SUFFIX, parseStoredName } from './names.ts';
import type { FileStore, StoredObject } from './port.ts';

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT';
}

/** Files under `<root>/<workspace id>/<key>`; a pending one has `.part` appended until renamed. */
export function createLocalStore(root: string): FileStore {
  const finalPath = (name: string) => path.join(root, checkedName(name));
  const pendingPath = (name: string) => `${finalPath(name)}${PENDING_SUFFIX}`;

  async function openExisting(filePath: string): Promise<Readable | undefined> {
    try {
      const handle = await open(filePath, 'r');
      return createReadStream('', { fd: handle, start: 0 });
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  return {
    kind: 'local',
    writePending: (name, source) =>
      withStorageFailures(fileSystemFailure, async () => {
        const target = pendingPath(name);
        await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
        try {
          await pipeline(source, createWriteStream(target, { flags: 'wx', mode: 0o600, flush: true }));
        } catch (error) {
          await rm(target, { force: true });
          throw error;
        }
      }),
    async finalize(name) {
      try {
        await rename(pendingPath(name), finalPath(name));
      } catch (error) {
        if (!isMissing(error) || !(await this.finalSize(name))) throw error;
      }
    },
    async open(name) {
      return (await openExisting(finalPath(name))) ?? (await openExisting(pendingPath(name)));
    },
    async finalSize(name) {
      try {
        const stats = await stat(finalPath(name));
        return stats.isFile() ? stats.size : undefined;
      } catch (error) {
        if (isMissing(error)) return undefined;
        throw error;
      }
    },
    async remove(name) {
      await rm(pendingPath(name), { force: true });
      await rm(finalPath(name), { force: true });
    },
    close() {},
    async *list(): AsyncIterable<StoredObject> {
      let entries: Dirent[];
      try {
        entries = await readdir(root, { recursive: true, withFileTypes: true });
      } catch (error) {
        if (isMissing(error)) return;
        throw error;
      }
      for (const entry of entries) {
        if (!entry.isFile()) continue;
        const parsed = parseStoredName(path.relative(root, path.join(entry.parentPath, entry.name)));
        if (!parsed) continue;
        const filePath = parsed.pending ? pendingPath(parsed.name) : finalPath(parsed.name);
        const stats = await stat(filePath).catch((error) =>
          isMissing(error) ? undefined : Promise.reject(error),
        );
        if (stats) yield { ...parsed, writtenAt: stats.mtimeMs };
      }
    },
  };
}
