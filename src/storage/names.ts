/** `<folder>/<file>`, both server-chosen: nothing a name holds can climb out of the store. */
const NAME = /^[A-Za-z0-9_-]{1,100}\/[A-Za-z0-9_-]{1,100}$/;

export const PENDING_SUFFIX = '.part';

export function checkedName(name: string): string {
  if (!NAME.test(name)) throw new Error(`not a stored file name: ${JSON.stringify(name)}`);
  return name;
}

/** A stored object's key or path back to its name and state; undefined for what the store did not write. */
export function parseStoredName(stored: string): { name: string; pending: boolean } | undefined {
  const pending = stored.endsWith(PENDING_SUFFIX);
  const name = pending ? stored.slice(0, -PENDING_SUFFIX.length) : stored;
  return NAME.test(name) ? { name, pending } : undefined;
}
