import { type FailpointName, type Failpoints, SimulatedCrash } from '../../src/purchase/index.ts';

export interface Hold {
  /** Settles when a request has reached the failpoint and is waiting there. */
  reached: Promise<void>;
  release(): void;
}

/**
 * Failpoints a test arms one at a time: the next request to reach a named place waits there until
 * released (to force one ordering of two racing requests), or dies there. Unarmed places pass.
 */
export class Holds implements Failpoints {
  readonly #armed = new Map<FailpointName, (() => Promise<void>)[]>();

  async hit(name: FailpointName): Promise<void> {
    const next = this.#armed.get(name)?.shift();
    if (next) await next();
  }

  holdNext(name: FailpointName): Hold {
    const reached = Promise.withResolvers<void>();
    const released = Promise.withResolvers<void>();
    this.#arm(name, async () => {
      reached.resolve();
      await released.promise;
    });
    return { reached: reached.promise, release: () => released.resolve() };
  }

  crashNext(name: FailpointName): void {
    this.#arm(name, async () => {
      throw new SimulatedCrash(name);
    });
  }

  #arm(name: FailpointName, action: () => Promise<void>): void {
    const queue = this.#armed.get(name) ?? [];
    queue.push(action);
    this.#armed.set(name, queue);
  }
}

/**
 * Forces an ordering: `held` runs until it reaches `at` and waits there, `meanwhile` runs to its
 * end, then `held` goes on. Returns both answers.
 */
export async function whileHeld<A, B>(
  holds: Holds,
  at: FailpointName,
  held: () => Promise<A>,
  meanwhile: () => Promise<B>,
): Promise<[A, B]> {
  const hold = holds.holdNext(at);
  const heldAnswer = held();
  await hold.reached;
  const other = await meanwhile();
  hold.release();
  return [await heldAnswer, other];
}
