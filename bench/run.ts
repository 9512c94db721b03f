import { benchAcpFloor, benchAcpHttp } from './acp-http.ts';
import { benchAcpPurchase } from './acp-purchase.ts';
import { benchApiRead } from './api-read.ts';
import { benchColdStart } from './cold-start.ts';
import { benchHealthz } from './healthz.ts';
import { benchMppPurchase } from './mpp-purchase.ts';
import { benchPurchase } from './purchase.ts';
import { benchReadsWrk } from './reads-wrk.ts';
import { benchWebhookIsolation, benchWebhooks } from './webhooks.ts';

/** `npm run bench` runs every benchmark; `npm run bench -- healthz` runs the ones named. */
const benchmarks: Record<string, () => Promise<void>> = {
  healthz: benchHealthz,
  purchase: benchPurchase,
  'acp-purchase': benchAcpPurchase,
  'acp-http': benchAcpHttp,
  'acp-floor': benchAcpFloor,
  'mpp-purchase': benchMppPurchase,
  'api-read': benchApiRead,
  'reads-wrk': benchReadsWrk,
  webhooks: benchWebhooks,
  'webhooks-isolation': benchWebhookIsolation,
  'cold-start': benchColdStart,
};

const selected = process.argv.slice(2);
for (const name of selected) {
  if (!(name in benchmarks)) {
    console.error(`unknown benchmark ${name}; known: ${Object.keys(benchmarks).join(', ')}`);
    process.exit(64);
  }
}
for (const [name, run] of Object.entries(benchmarks)) {
  if (selected.length === 0 || selected.includes(name)) await run();
}
