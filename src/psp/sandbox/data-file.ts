import path from 'node:path';

/** Where the sandbox keeps its state for `npm start` and `npm run psp-sandbox`: beside the service's data. */
export function sandboxDataFile(dataDir: string): string {
  return path.join(dataDir, 'psp-sandbox.sqlite');
}
