/** Every response the chaos clients saw, and the windows in which faults were active. */

export interface Seen {
  at: number;
  kind: string;
  /** 0: no HTTP answer (connection refused or cut, or the client's own timeout). */
  status: number;
  served: string | undefined;
}

export interface Window {
  fault: string;
  from: number;
  /** Open while the fault lasts; closed when the service has recovered. */
  to: number | undefined;
}

export class Journal {
  readonly responses: Seen[] = [];
  readonly faults: Window[] = [];
  /** The database outages (PostgreSQL restarts), during which 500s are documented. */
  readonly outages: Window[] = [];

  saw(kind: string, status: number, served?: string | null): void {
    this.responses.push({ at: Date.now(), kind, status, served: served ?? undefined });
  }

  open(fault: string, outage = false): Window {
    const window: Window = { fault, from: Date.now(), to: undefined };
    this.faults.push(window);
    if (outage) this.outages.push(window);
    return window;
  }

  /** Whether `at` falls in a window (still open ones reach to now), widened by `graceMs` after it. */
  static within(windows: readonly Window[], at: number, graceMs = 0): boolean {
    return windows.some((window) => at >= window.from && at <= (window.to ?? Date.now()) + graceMs);
  }
}

/** fetch, with the answer (or its absence) recorded under `kind` and the client's own time limit. */
export async function call(
  journal: Journal,
  kind: string,
  url: string,
  init: RequestInit = {},
  timeoutMs = 60_000,
): Promise<{ status: number; headers: Headers; text: string; bytes: Buffer }> {
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    const bytes = Buffer.from(await response.arrayBuffer());
    journal.saw(kind, response.status, response.headers.get('x-served-by'));
    return { status: response.status, headers: response.headers, text: bytes.toString('utf8'), bytes };
  } catch {
    journal.saw(kind, 0);
    return { status: 0, headers: new Headers(), text: '', bytes: Buffer.alloc(0) };
  }
}

export function parseJson(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
