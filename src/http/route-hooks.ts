/** A route's own hooks of one kind as an array: a route declares none, one or several. */
export function routeHooks<Hook>(declared: Hook | Hook[] | undefined): Hook[] {
  if (declared === undefined) return [];
  return Array.isArray(declared) ? declared : [declared];
}
