import { enableCompileCache } from 'node:module';

// The service loads about 1,300 modules before it listens. Node keeps their compiled code on disk
// (under the system's temporary directory), so every start after the first skips parsing and
// compiling them again. Enabled before the service's own imports, which is why they are dynamic.
enableCompileCache();
const { serve } = await import('./serve.ts');
await serve();
