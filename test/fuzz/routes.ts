import type { FastifyInstance } from 'fastify';

export interface Route {
  method: string;
  /** The route's pattern, `:name` for a parameter. */
  url: string;
}

const TREE_LINE = /^((?:│ {3}| {4})*)(?:├── |└── )(.*?)(?: \(([A-Z, ]+)\))?$/;

/**
 * Every route the app has registered, read from Fastify's own route tree (`printRoutes`), so a
 * route added to any module is covered without naming it here. Each line of the tree is a path
 * segment under its parent, indented four characters per level, with its methods. Call it once
 * the app is ready: routes of plugins not loaded yet are missing before that.
 */
export function routesOf(app: FastifyInstance): Route[] {
  const routes: Route[] = [];
  const ancestors: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const parsed = TREE_LINE.exec(line);
    if (!parsed) continue;
    const [, indent = '', segment = '', methods] = parsed;
    ancestors.length = indent.length / 4;
    ancestors.push(segment);
    const url = ancestors.join('');
    for (const method of methods?.split(', ') ?? []) routes.push({ method, url });
  }
  return routes;
}

const PARAMETER = /:\w+|\*/g;

/** For each parameter of a pattern, the pattern up to and including it (`/tasks/:id` for `:id`). */
export function parameterPrefixes(pattern: string): string[] {
  return [...pattern.matchAll(PARAMETER)].map((match) => pattern.slice(0, match.index + match[0].length));
}

/** The pattern with each parameter replaced by `valueFor` its prefix (see `parameterPrefixes`). */
export function fillPattern(pattern: string, valueFor: (prefix: string, index: number) => string): string {
  const prefixes = parameterPrefixes(pattern);
  let index = 0;
  return pattern.replace(PARAMETER, () => {
    const at = index++;
    return valueFor(prefixes[at] as string, at);
  });
}
