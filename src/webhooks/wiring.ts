import type { ModuleWiring } from '../jobs/index.ts';
import { MINUTE_MS } from '../shared/clock.ts';
import type { DeliveryDeps } from './context.ts';
import { deliverWebhookJob } from './delivery-job.ts';
import { DELIVER_WEBHOOK_JOB } from './events.ts';
import { sweepWebhookData } from './retention.ts';

/** The delivery job and the retention sweep. */
export function webhooksWiring(deps: DeliveryDeps): ModuleWiring {
  return {
    jobs: { [DELIVER_WEBHOOK_JOB]: deliverWebhookJob(deps) },
    sweeps: [
      {
        name: 'webhooks.retention',
        intervalMs: 60 * MINUTE_MS,
        run: async () => void (await sweepWebhookData(deps.db, deps.clock)),
      },
    ],
  };
}
