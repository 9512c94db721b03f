/** Something that looks like an address anywhere in a text (an SMTP reply, an error message). */
const ADDRESS_IN_TEXT = /[^\s<>()[\]"',;:@]+@[^\s<>()[\]"',;:@]+/gu;

/** `alice@example.com` -> `a***@example.com`: enough to tell addresses apart in a log, not to mail them. */
export function maskEmail(address: string): string {
  const at = address.lastIndexOf('@');
  if (at <= 0) return '***';
  return `${address.slice(0, 1)}***${address.slice(at)}`;
}

/** The text with every address in it masked, for log lines and errors that reach them. */
export function maskEmailsIn(text: string): string {
  return text.replace(ADDRESS_IN_TEXT, maskEmail);
}
