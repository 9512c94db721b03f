const EMAIL_ADDRESS = /^[^\s@\p{Cc}\p{Cs}]+@[^\s@\p{Cc}\p{Cs}]+\.[^\s@\p{Cc}\p{Cs}]+$/u;

/**
 * A pragmatic address check (one @, a dotted domain, no spaces, control characters or unpaired
 * surrogates); the mail server has the last word.
 */
export function isEmailAddress(value: string): boolean {
  return value.length <= 254 && EMAIL_ADDRESS.test(value);
}
