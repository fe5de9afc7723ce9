import type { BusRecord } from '../message-bus.ts';

/** One partition of an in-memory topic: an append-only array and waiters for new records. */
export class MemoryLog {
  readonly records: BusRecord[] = [];
  readonly #waiters = new Set<() => void>();

  append(record: Omit<BusRecord, 'offset'>): void {
    this.records.push({ ...record, offset: String(this.records.length) });
    for (const wake of [...this.#waiters]) wake();
  }

  /** Registers `wake` to be called on the next append; returns the unregister function. */
  onAppend(wake: () => void): () => void {
    this.#waiters.add(wake);
    return () => this.#waiters.delete(wake);
  }
}
