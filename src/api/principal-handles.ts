import { randomBytes } from 'node:crypto';
import type { Principal } from '../api-keys/index.ts';

/** The header an in-process request (`app.inject`) names its principal's handle in. */
export const PRINCIPAL_HANDLE_HEADER = 'x-svc-principal-handle';

/**
 * Principals handed to in-process requests by other doors (the MCP endpoint runs each tool as the
 * REST route it is). A handle is 256 random bits, lives in this process only, and is taken by the
 * first request that presents it; a request from outside cannot name a principal it was not given.
 */
const handles = new Map<string, Principal>();

/** A one-time handle for `principal`; `release` forgets it if no request took it. */
export function principalHandle(principal: Principal): { handle: string; release(): void } {
  const handle = randomBytes(32).toString('base64url');
  handles.set(handle, principal);
  return { handle, release: () => handles.delete(handle) };
}

export function takePrincipal(handle: string): Principal | undefined {
  const principal = handles.get(handle);
  handles.delete(handle);
  return principal;
}
