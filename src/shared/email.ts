import { type TStringOptions, Type } from 'typebox';
import { Format } from 'typebox/format';

/**
 * The one rule for an email address, on every surface (checkout buyers of ACP, UCP and MPP, REST
 * people, invitations, the operator CLI). Pragmatic rather than RFC 5322 in full: the mail server
 * has the last word, but an address no server could deliver to is refused before anyone pays.
 *
 * - at most 254 octets in UTF-8, the local part at most 64;
 * - the local part: dot-separated runs of letters, digits and ``!#$%&'*+/=?^_`{|}~-`` (letters
 *   and digits of any script), no leading, trailing or consecutive dots, no quoted form;
 * - the domain: at least two dot-separated labels of letters, digits and `-`, each 1–63
 *   characters, neither starting nor ending with `-`; the last (the TLD) is at least two letters
 *   or an A-label (`xn--...`);
 * - no spaces, control or format characters, unpaired surrogates or IP-literal domains.
 */
export function isEmailAddress(value: string): boolean {
  if (typeof value !== 'string' || Buffer.byteLength(value) > MAX_ADDRESS_OCTETS) return false;
  const at = value.lastIndexOf('@');
  if (at < 1) return false;
  const local = value.slice(0, at);
  const domain = value.slice(at + 1);
  if (Buffer.byteLength(local) > MAX_LOCAL_OCTETS || !LOCAL_PART.test(local)) return false;
  const labels = domain.split('.');
  const tld = labels[labels.length - 1] ?? '';
  return labels.length >= 2 && labels.every((label) => DOMAIN_LABEL.test(label)) && TLD.test(tld);
}

const MAX_ADDRESS_OCTETS = 254;
const MAX_LOCAL_OCTETS = 64;

const ATOM = "[\\p{L}\\p{M}\\p{N}!#$%&'*+/=?^_`{|}~-]+";
const LOCAL_PART = new RegExp(`^${ATOM}(?:\\.${ATOM})*$`, 'u');
const DOMAIN_LABEL = /^(?=.{1,63}$)[\p{L}\p{M}\p{N}](?:[\p{L}\p{M}\p{N}-]*[\p{L}\p{M}\p{N}])?$/u;
const TLD = /^(?:\p{L}[\p{L}\p{M}]+|xn--[a-z0-9-]+)$/iu;

/**
 * JSON Schema `format` name of the rule. TypeBox, the one validator (`http/validation.ts`), checks
 * it with `isEmailAddress`: its registry is set here, so a schema made with `EmailAddress` always
 * has it.
 */
export const EMAIL_FORMAT = 'email';
Format.Set(EMAIL_FORMAT, isEmailAddress);

/** A string schema holding an email address under the one rule. */
export const EmailAddress = (options: TStringOptions = {}) =>
  Type.String({ format: EMAIL_FORMAT, maxLength: MAX_ADDRESS_OCTETS, ...options });
