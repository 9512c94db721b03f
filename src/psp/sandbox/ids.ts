import { randomInt } from 'node:crypto';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const RANDOM_PART_LENGTH = 24;

/** Stripe-style object id, e.g. `pi_3Qx…` with 24 random alphanumerics after the prefix. */
export function randomId(prefix: string): string {
  let suffix = '';
  for (let index = 0; index < RANDOM_PART_LENGTH; index++) {
    suffix += ALPHANUMERIC.charAt(randomInt(ALPHANUMERIC.length));
  }
  return `${prefix}_${suffix}`;
}

export function unixSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}
