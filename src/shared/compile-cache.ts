import { enableCompileCache } from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * Turns on Node's compile cache for this process and the processes and worker threads it starts.
 * A process entry calls it before its own imports, which is why an entry imports the rest
 * dynamically: static imports are compiled before any code of the entry runs. The service and
 * the CLI load hundreds of modules; with the cache every run after the first skips parsing and
 * compiling them again. The cache is code Node runs, so it lives in the installation
 * (node_modules/.cache), never in a shared temporary directory another user could write;
 * NODE_COMPILE_CACHE moves it. The variable is what worker threads (an evidence package's build)
 * read, not this call: without it each worker would load the TypeScript stripper again (about 20 MB).
 */
export function enableInstallationCompileCache(): void {
  process.env.NODE_COMPILE_CACHE ??= fileURLToPath(
    new URL('../../node_modules/.cache/node-compile-cache', import.meta.url),
  );
  enableCompileCache(process.env.NODE_COMPILE_CACHE);
}
