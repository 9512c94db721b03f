import Fastify from 'fastify';
import { loadConfig } from '../src/config.ts';
import { createRuntime } from '../src/runtime.ts';
import { load, PRODUCTION_ENV, productionLogger, ratio, report } from './harness.ts';

/** `/healthz` through the whole app (hooks, headers, logging) against a bare Fastify route, same run. */
export async function benchHealthz(): Promise<void> {
  const runtime = await createRuntime(loadConfig({ ...PRODUCTION_ENV, DATABASE_URL: 'sqlite::memory:' }), {
    logger: productionLogger('info'),
  });
  const appUrl = await runtime.app.listen({ host: '127.0.0.1', port: 0 });

  const bare = Fastify();
  bare.get('/healthz', async () => ({ status: 'ok' }));
  const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });

  try {
    const bareResult = await load({ url: `${bareUrl}/healthz` });
    const appResult = await load({ url: `${appUrl}/healthz` });
    report('healthz', {
      app: appResult,
      bare: bareResult,
      ratio: ratio(appResult, bareResult),
    });
  } finally {
    await bare.close();
    await runtime.close();
  }
}
