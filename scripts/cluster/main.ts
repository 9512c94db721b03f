/**
 * `npm run cluster [-- --instances N]`: the service scaled out on this machine (see cluster.ts),
 * until Ctrl-C or SIGTERM, which stop everything it started and drop its database.
 */
import { parseArgs } from 'node:util';
import { startCluster } from './cluster.ts';

const { values } = parseArgs({ options: { instances: { type: 'string', default: '2' } } });
const instances = Number(values.instances);
if (!Number.isInteger(instances) || instances < 1 || instances > 16) {
  console.error(`--instances must be an integer from 1 to 16 (got ${values.instances})`);
  process.exit(64);
}

const cluster = await startCluster({ instances, log: (line) => console.log(line) });
console.log(`\ncluster ready: ${cluster.url}  (Ctrl-C stops it)`);
console.log(`  npm run svc with: DATABASE_URL=${cluster.databaseUrl}`);

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: stopping the instances, HAProxy and the PSP sandbox; dropping the database`);
  try {
    await cluster.stop();
    process.exit(0);
  } catch (error) {
    console.error(`stopping the cluster failed: ${(error as Error).message}`);
    process.exit(1);
  }
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
