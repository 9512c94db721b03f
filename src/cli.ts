import { enableInstallationCompileCache } from './shared/compile-cache.ts';

// The operator commands (`npm run svc -- ...`), run by tests and scripts dozens of times.
enableInstallationCompileCache();
await import('./cli-commands.ts');
