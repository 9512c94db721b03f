import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { bodyParams, readInteger, readString } from './form.ts';

export const FAULTS_PATH = '/v1/test_helpers/sandbox/faults';
const MAX_COUNT = 1_000_000;
const MAX_LATENCY_MS = 60_000;
const FAIL_STATUS_RANGE = { min: 400, max: 599 } as const;
const DEFAULT_FAIL_STATUS = 500;

export interface FaultSettings {
  readonly drop_responses: number;
  readonly fail_next: number;
  readonly fail_status: number;
  /** Only requests to this path (e.g. one session's `/expire`) take the failures; null for any. */
  readonly fail_path: string | null;
  readonly latency_ms: number;
}

/** Test-only misbehaviour, consumed by the request pipeline in server.ts. */
export class SandboxFaults {
  #dropResponses = 0;
  #failNext = 0;
  #failStatus = DEFAULT_FAIL_STATUS;
  #failPath: string | null = null;
  #latencyMs = 0;

  /** The next `count` POST /v1/payment_intents are executed fully, then their connection is cut unanswered. */
  dropResponses(count: number): void {
    this.#dropResponses = checkedInteger(count, 'count', { min: 0, max: MAX_COUNT });
  }

  /**
   * The next `count` requests (to `path` only, when given) are answered with an `api_error` of
   * `status` without being executed.
   */
  failNext(count: number, status: number = DEFAULT_FAIL_STATUS, path: string | null = null): void {
    this.#failNext = checkedInteger(count, 'count', { min: 0, max: MAX_COUNT });
    this.#failStatus = checkedInteger(status, 'status', FAIL_STATUS_RANGE);
    this.#failPath = path;
  }

  /** Every response is delayed by `ms`. */
  latency(ms: number): void {
    this.#latencyMs = checkedInteger(ms, 'ms', { min: 0, max: MAX_LATENCY_MS });
  }

  reset(): void {
    this.#dropResponses = 0;
    this.#failNext = 0;
    this.#failStatus = DEFAULT_FAIL_STATUS;
    this.#failPath = null;
    this.#latencyMs = 0;
  }

  settings(): FaultSettings {
    return {
      drop_responses: this.#dropResponses,
      fail_next: this.#failNext,
      fail_status: this.#failStatus,
      fail_path: this.#failPath,
      latency_ms: this.#latencyMs,
    };
  }

  /** The status to fail this request (to `path`) with, if a failure is pending for it. */
  takeFailure(path: string): number | undefined {
    if (this.#failNext === 0 || (this.#failPath !== null && path !== this.#failPath)) return undefined;
    this.#failNext--;
    return this.#failStatus;
  }

  takeDroppedResponse(): boolean {
    if (this.#dropResponses === 0) return false;
    this.#dropResponses--;
    return true;
  }

  async delay(): Promise<void> {
    if (this.#latencyMs > 0) await sleep(this.#latencyMs);
  }
}

function checkedInteger(value: number, name: string, range: { min: number; max: number }): number {
  if (!Number.isInteger(value) || value < range.min || value > range.max) {
    throw new RangeError(`${name} must be an integer from ${range.min} to ${range.max}, got ${value}`);
  }
  return value;
}

/**
 * `POST` sets the given faults (form or JSON: drop_responses, fail_next, fail_status, fail_path, latency_ms),
 * leaving the others as they are; `DELETE` resets all. Both answer with the current settings.
 */
export function registerFaultRoutes(app: FastifyInstance, faults: SandboxFaults): void {
  app.post(FAULTS_PATH, async (request) => {
    const params = bodyParams(request.body);
    const counts = { min: 0, max: MAX_COUNT };
    const dropResponses = readInteger(params.drop_responses, 'drop_responses', counts);
    const failNext = readInteger(params.fail_next, 'fail_next', counts);
    const failStatus = readInteger(params.fail_status, 'fail_status', FAIL_STATUS_RANGE);
    const failPath = readString(params.fail_path, 'fail_path');
    const latencyMs = readInteger(params.latency_ms, 'latency_ms', { min: 0, max: MAX_LATENCY_MS });
    if (dropResponses !== undefined) faults.dropResponses(dropResponses);
    if (failNext !== undefined || failStatus !== undefined || failPath !== undefined) {
      faults.failNext(
        failNext ?? faults.settings().fail_next,
        failStatus ?? DEFAULT_FAIL_STATUS,
        failPath ?? null,
      );
    }
    if (latencyMs !== undefined) faults.latency(latencyMs);
    return faultsResource(faults);
  });
  app.delete(FAULTS_PATH, async () => {
    faults.reset();
    return faultsResource(faults);
  });
}

function faultsResource(faults: SandboxFaults) {
  return { object: 'sandbox.faults', ...faults.settings() };
}
