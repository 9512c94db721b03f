import type { Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  paginateListObjectsV2,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { S3StorageConfig } from '../config.ts';
import { connectionFailure, type FailureKindOf, withStorageFailures } from './failures.ts';
import { checkedName, PENDING_SUFFIX, parseStoredName } from './names.ts';
import type { FileStore, StoredObject } from './port.ts';

/** The smallest part S3 accepts; an upload holds at most two of them in memory. */
const PART_BYTES = 5 * 1024 * 1024;

function isMissing(error: unknown): boolean {
  return (
    error instanceof S3ServiceException &&
    (error.name === 'NoSuchKey' || error.name === 'NotFound' || error.$metadata.httpStatusCode === 404)
  );
}

/**
 * A 507 (an S3-compatible server's full disk) is full; any other 5xx (after the SDK's own retries),
 * a time-out or a connection that failed is S3 unavailable for now.
 */
const s3Failure: FailureKindOf = (error) => {
  if (error instanceof S3ServiceException) {
    const status = error.$metadata.httpStatusCode ?? 0;
    if (status === 507) return 'full';
    if (status >= 500) return 'unavailable';
  }
  if (error instanceof Error && error.name === 'TimeoutError') return 'unavailable';
  return connectionFailure(error);
};

/**
 * Objects `<prefix><workspace id>/<key>` in one bucket, written through the official SDK in parts
 * as the upload arrives. A pending object carries `.part`; finalizing copies it inside the bucket
 * (the copy never passes through the service) and removes the pending one.
 */
export function createS3Store(config: S3StorageConfig, client?: S3Client): FileStore {
  const s3 =
    client ??
    new S3Client({
      region: config.region,
      endpoint: config.endpoint,
      forcePathStyle: config.forcePathStyle,
      // S3-compatible servers do not all take the SDK's default trailing checksums on streamed
      // bodies; against them, checksums are sent only where the API requires one.
      ...(config.endpoint
        ? { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' }
        : {}),
    });
  const Bucket = config.bucket;
  const finalKey = (name: string) => `${config.prefix}${checkedName(name)}`;
  const pendingKey = (name: string) => `${finalKey(name)}${PENDING_SUFFIX}`;

  async function get(Key: string): Promise<Readable | undefined> {
    try {
      const object = await s3.send(new GetObjectCommand({ Bucket, Key }));
      return object.Body as Readable;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async function head(Key: string): Promise<number | undefined> {
    try {
      return (await s3.send(new HeadObjectCommand({ Bucket, Key }))).ContentLength;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  return {
    kind: 's3',
    writePending: (name, source) =>
      withStorageFailures(s3Failure, async () => {
        const upload = new Upload({
          client: s3,
          params: { Bucket, Key: pendingKey(name), Body: source },
          partSize: PART_BYTES,
          queueSize: 1,
        });
        await upload.done();
      }),
    async finalize(name) {
      const Key = pendingKey(name);
      try {
        await s3.send(
          new CopyObjectCommand({ Bucket, Key: finalKey(name), CopySource: `${Bucket}/${encodeURI(Key)}` }),
        );
      } catch (error) {
        if (!isMissing(error) || (await head(finalKey(name))) === undefined) throw error;
        return;
      }
      await s3.send(new DeleteObjectCommand({ Bucket, Key }));
    },
    async open(name) {
      return (await get(finalKey(name))) ?? (await get(pendingKey(name)));
    },
    finalSize: (name) => head(finalKey(name)),
    async remove(name) {
      await s3.send(new DeleteObjectCommand({ Bucket, Key: pendingKey(name) }));
      await s3.send(new DeleteObjectCommand({ Bucket, Key: finalKey(name) }));
    },
    close() {
      if (!client) s3.destroy();
    },
    async *list(): AsyncIterable<StoredObject> {
      for await (const page of paginateListObjectsV2({ client: s3 }, { Bucket, Prefix: config.prefix })) {
        for (const object of page.Contents ?? []) {
          const parsed = parseStoredName((object.Key ?? '').slice(config.prefix.length));
          if (parsed) yield { ...parsed, writtenAt: object.LastModified?.getTime() ?? 0 };
        }
      }
    },
  };
}
