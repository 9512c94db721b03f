import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TestEvent } from 'node:test/reporters';

/**
 * A node:test reporter that measures each test file's wall time (its process, from start to exit).
 * At the end it prints the slowest files and, with TEST_TIMINGS_FILE set, writes every file's time
 * to that JSON file. Used next to the spec reporter:
 * `--test-reporter=spec --test-reporter-destination=stdout
 *  --test-reporter=./scripts/test-timings.ts --test-reporter-destination=stdout`.
 */
export default async function* testTimings(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const started = Date.now();
  const files: { file: string; seconds: number; passed: boolean }[] = [];
  for await (const event of source) {
    if (event.type !== 'test:complete') continue;
    const { nesting, name, file } = event.data;
    // The runner reports each file as a test of its own, named by the file's relative path.
    if (nesting !== 0 || file === undefined || path.resolve(name) !== file) continue;
    files.push({
      file: name,
      seconds: event.data.details.duration_ms / 1000,
      passed: event.data.details.passed,
    });
  }
  const wallSeconds = (Date.now() - started) / 1000;
  files.sort((a, b) => b.seconds - a.seconds);
  const target = process.env.TEST_TIMINGS_FILE;
  if (target) writeFileSync(target, `${JSON.stringify({ wallSeconds, files }, null, 2)}\n`);
  const sum = files.reduce((total, entry) => total + entry.seconds, 0);
  yield `\n${files.length} test files in ${wallSeconds.toFixed(1)} s wall (${sum.toFixed(1)} s summed over files); the slowest:\n`;
  for (const entry of files.slice(0, 15)) yield `${entry.seconds.toFixed(1).padStart(8)} s  ${entry.file}\n`;
}
