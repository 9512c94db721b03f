import type { WebDeps } from '../context.ts';
import type { SessionCookies } from '../session.ts';

export interface RouteDeps extends WebDeps {
  cookies: SessionCookies;
}
