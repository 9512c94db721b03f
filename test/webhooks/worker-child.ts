// A service instance in a child process that works the job queue once, so a test can SIGKILL it
// while a webhook attempt is in flight. Everything comes from the environment.
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { createRuntime } from '../../src/runtime.ts';

const config = loadConfig({
  NODE_ENV: 'test',
  DATABASE_URL: process.env.CHILD_DATABASE_URL,
  BASE_URL: 'http://svc.test',
  WEBHOOK_ALLOW_LOOPBACK: 'true',
});
const database = openDatabase(config.database, { searchPath: process.env.CHILD_SEARCH_PATH || undefined });
const runtime = await createRuntime(config, { database });
await runtime.jobs.drain();
await runtime.close();
await database.close();
