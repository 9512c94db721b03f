import { performance } from 'node:perf_hooks';

/** Runs `count` purchases with `concurrency` in flight; `purchase(i)` says whether the i-th succeeded. */
export async function measurePurchases(
  count: number,
  concurrency: number,
  purchase: (i: number) => Promise<boolean>,
) {
  const latencies: number[] = [];
  let failures = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < count; i = next++) {
        const t0 = performance.now();
        if (!(await purchase(i))) failures++;
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (p: number) =>
    Math.round((latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0) * 10) / 10;
  return {
    purchases: count,
    concurrency,
    purchasesPerSecond: Math.round(count / seconds),
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    failures,
  };
}
