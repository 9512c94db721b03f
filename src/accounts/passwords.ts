import { randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';

/** `Algorithm.Argon2id` of @node-rs/argon2 (a const enum, which type stripping cannot inline). */
const ARGON2ID = 2;

/**
 * Argon2id with OWASP's first recommended setting: 19 MiB of memory, 2 passes, 1 lane (about
 * 50 ms on one core here). The parameters are in every stored hash, so raising them later only
 * affects new hashes; `needsRehash` tells which stored ones to upgrade at the next sign-in.
 */
const PARAMETERS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;
const CURRENT_PREFIX = `$argon2id$v=19$m=${PARAMETERS.memoryCost},t=${PARAMETERS.timeCost},p=${PARAMETERS.parallelism}$`;

export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 128;

/** Why a new password is refused, for the person choosing it; undefined when it is acceptable. */
export function passwordProblem(password: string): string | undefined {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH) return `Use at least ${PASSWORD_MIN_LENGTH} characters.`;
  if (length > PASSWORD_MAX_LENGTH) return `Use at most ${PASSWORD_MAX_LENGTH} characters.`;
  return undefined;
}

export function hashPassword(password: string): Promise<string> {
  return hash(password.normalize('NFKC'), PARAMETERS);
}

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password.normalize('NFKC'));
  } catch {
    return false;
  }
}

export function needsRehash(stored: string): boolean {
  return !stored.startsWith(CURRENT_PREFIX);
}

let dummyHash: Promise<string> | undefined;

/**
 * Spends the time a real check would when there is no account for the address, so the answer's
 * timing does not tell whether one exists.
 */
export async function verifyAgainstDummy(password: string): Promise<false> {
  dummyHash ??= hashPassword(randomBytes(16).toString('base64url'));
  await verifyPassword(await dummyHash, password);
  return false;
}
