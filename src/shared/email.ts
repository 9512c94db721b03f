/** A pragmatic address check (one @, a dotted domain, no spaces); the mail server has the last word. */
export function isEmailAddress(value: string): boolean {
  return value.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value);
}
