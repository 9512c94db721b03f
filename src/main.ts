import { enableInstallationCompileCache } from './shared/compile-cache.ts';

enableInstallationCompileCache();
const { serve } = await import('./serve.ts');
await serve();
