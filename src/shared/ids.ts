import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const RANDOM_POOL_BYTES = 4096;
let randomPool = Buffer.alloc(0);
let randomPoolUsed = 0;

/**
 * `size` bytes from the system's secure generator, drawn from a pool it fills 4 KB at a time (as
 * Node does for `randomUUID`): one call to the generator cost more than the few bytes an id or a
 * secret takes. Each byte is handed out once, in a buffer of its own.
 */
export function secureRandomBytes(size: number): Buffer {
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`not a byte count: ${size}`);
  if (size > RANDOM_POOL_BYTES) return randomBytes(size);
  if (randomPoolUsed + size > randomPool.length) {
    randomPool = randomBytes(RANDOM_POOL_BYTES);
    randomPoolUsed = 0;
  }
  const bytes = Buffer.from(randomPool.subarray(randomPoolUsed, randomPoolUsed + size));
  randomPool.fill(0, randomPoolUsed, randomPoolUsed + size);
  randomPoolUsed += size;
  return bytes;
}

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

function encodeBase32(bytes: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += CROCKFORD[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += CROCKFORD[(value << (5 - bits)) & 31];
  return out;
}

/**
 * A public record id: `prefix_` + 48-bit millisecond time + 80 random bits, base32.
 * Ids sort by creation time (within a process, also inside one millisecond), which keyset
 * pagination relies on; `at` is the record's creation time, from the injected clock.
 */
export function newId(prefix: string, at: Date): string {
  const bytes = new Uint8Array(16);
  let time = at.getTime();
  for (let i = 5; i >= 0; i--) {
    bytes[i] = time % 256;
    time = Math.floor(time / 256);
  }
  bytes.set(nextRandomPart(at.getTime()), 6);
  return `${prefix}_${encodeBase32(bytes)}`;
}

let lastTime = -1;
const lastRandom = new Uint8Array(10);

/**
 * Fresh random bits for a new millisecond; within the same millisecond the previous bits plus one,
 * so ids made by one process in one millisecond still sort in the order they were made.
 */
function nextRandomPart(time: number): Uint8Array {
  if (time !== lastTime) {
    lastTime = time;
    lastRandom.set(secureRandomBytes(10));
    return lastRandom;
  }
  for (let i = lastRandom.length - 1; i >= 0; i--) {
    lastRandom[i] = ((lastRandom[i] ?? 0) + 1) & 0xff;
    if (lastRandom[i] !== 0) break;
  }
  return lastRandom;
}

/** A bearer secret: `prefix` + base64url of `byteLength` random bytes (256 bits by default). */
export function newSecret(prefix: string, byteLength = 32): string {
  return `${prefix}${secureRandomBytes(byteLength).toString('base64url')}`;
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
