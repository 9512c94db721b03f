/** The only source of "now" in the service, so expiry and term ends are testable without sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  #current: number;

  constructor(start: Date | string = '2026-01-01T00:00:00.000Z') {
    this.#current = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.#current);
  }

  set(at: Date | string): void {
    this.#current = new Date(at).getTime();
  }

  advance(ms: number): void {
    this.#current += ms;
  }
}

export const MINUTE_MS = 60_000;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;
