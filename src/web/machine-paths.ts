/** Paths of surfaces with formats of their own (protocols, REST API, discovery, health): never an HTML 404. */
const MACHINE_PREFIXES = ['/api/', '/.well-known/', '/dev/'];
const MACHINE_PATHS = new Set(['/openapi.json', '/healthz', '/readyz']);

export function isMachinePath(path: string): boolean {
  return MACHINE_PATHS.has(path) || MACHINE_PREFIXES.some((prefix) => path.startsWith(prefix));
}
