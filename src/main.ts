import { enableCompileCache } from 'node:module';
import { fileURLToPath } from 'node:url';

// The service loads about 1,300 modules before it listens. Node keeps their compiled code on disk,
// so every start after the first skips parsing and compiling them again. The cache is code Node
// runs, so it lives in the installation (node_modules/.cache), never in a shared temporary
// directory another user could write; NODE_COMPILE_CACHE moves it. It is turned on before the
// service's own imports, which is why they are dynamic. The variable is set for the worker threads
// (an evidence package's build), which read it and not this call: without it each worker would
// load the TypeScript stripper again (about 20 MB).
process.env.NODE_COMPILE_CACHE ??= fileURLToPath(
  new URL('../node_modules/.cache/node-compile-cache', import.meta.url),
);
enableCompileCache(process.env.NODE_COMPILE_CACHE);
const { serve } = await import('./serve.ts');
await serve();
