import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TestEvent } from 'node:test/reporters';

interface FileTime {
  file: string;
  seconds: number;
  passed: boolean;
}

/**
 * A node:test reporter that measures each test file's wall time (its process, from start to exit).
 * At the end it prints the slowest files; with TEST_TIMINGS_FILE set it writes every file's time
 * to that JSON file, after each file (an interrupted run leaves what it measured). Used next to
 * the spec reporter: `--test-reporter=spec --test-reporter-destination=stdout
 * --test-reporter=./scripts/test-timings.ts --test-reporter-destination=stdout`.
 */
export default async function* testTimings(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const started = Date.now();
  const files: FileTime[] = [];
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
    files.sort((a, b) => b.seconds - a.seconds);
    record(started, files);
  }
  const wallSeconds = record(started, files);
  const sum = files.reduce((total, entry) => total + entry.seconds, 0);
  yield `\n${files.length} test files in ${wallSeconds.toFixed(1)} s wall (${sum.toFixed(1)} s summed over files); the slowest:\n`;
  for (const entry of files.slice(0, 15)) yield `${entry.seconds.toFixed(1).padStart(8)} s  ${entry.file}\n`;
}

/** Writes the times so far to TEST_TIMINGS_FILE when it is set; returns the seconds since the start. */
function record(started: number, files: FileTime[]): number {
  const wallSeconds = (Date.now() - started) / 1000;
  const target = process.env.TEST_TIMINGS_FILE;
  if (target) writeFileSync(target, `${JSON.stringify({ wallSeconds, files }, null, 2)}\n`);
  return wallSeconds;
}
