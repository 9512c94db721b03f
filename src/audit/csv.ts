/**
 * One CSV field. A spreadsheet runs a cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage
 * return as a formula, and names, addresses and user agents are anyone's to choose: such a cell
 * gets a leading `'` (OWASP's advice). Then quoted as RFC 4180 says when it needs to be.
 */
export function csvField(value: string | null): string {
  if (value === null) return '';
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}
