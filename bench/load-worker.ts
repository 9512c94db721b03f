import autocannon from 'autocannon';
import type { LoadOptions } from './harness.ts';

/**
 * The load generator in a process of its own, so that its CPU is not taken from the server it
 * measures: reads the options as JSON from argv, prints autocannon's result as one JSON line.
 */
const options = JSON.parse(process.argv[2] ?? '{}') as LoadOptions;
const result = await autocannon({
  url: options.url,
  method: options.method ?? 'GET',
  headers: options.headers,
  body: options.body,
  connections: options.connections ?? 10,
  duration: options.durationSeconds ?? 5,
});
console.log(
  JSON.stringify({
    requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
  }),
);
