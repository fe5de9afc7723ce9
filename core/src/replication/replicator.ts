import { type Logger, PolyvisionError, silentLogger } from '@polyvision/shared';
import { type AddCopyDeps, addCopy } from './add-copy.ts';
import { type CatalogFile, getCatalogFile, listCopies } from './copies.ts';

/** What {@link Replicator.ensure} achieved for a file. */
export interface CopiesOutcome {
  /** Verified copies on SEs not avoided. */
  verified: number;
  /** Copies required on this fleet. */
  required: number;
  /** The last error when the file is still short of copies. */
  error?: unknown;
}

/**
 * Brings files up to the required number of verified copies, one file at a
 * time per process: a second `ensure()` of a file already in progress
 * shares the first one's promise (ingest's upload completion and the
 * repairer may ask together).
 */
export class Replicator {
  readonly #deps: AddCopyDeps;
  readonly #required: number;
  readonly #logger: Logger;
  readonly #inFlight = new Map<string, Promise<CopiesOutcome>>();
  readonly #closing = new AbortController();

  /** @param required copies per file on this fleet (options.ts `requiredCopies`). */
  constructor(deps: AddCopyDeps, required: number) {
    this.#deps = deps;
    this.#required = required;
    this.#logger = deps.logger ?? silentLogger;
  }

  /** Copies required per file. */
  get required(): number {
    return this.#required;
  }

  /**
   * Adds copies of `fileId` until it has {@link required} verified ones on SEs
   * outside `avoidStorageIds`, or until a copy fails (the error is returned,
   * not thrown: the repairer tries again on its next scan).
   */
  ensure(fileId: string | CatalogFile, avoidStorageIds: ReadonlySet<string> = new Set()): Promise<CopiesOutcome> {
    const id = typeof fileId === 'string' ? fileId : fileId.file_id;
    const running = this.#inFlight.get(id);
    if (running) return running;
    const work = this.#ensure(fileId, avoidStorageIds).finally(() => this.#inFlight.delete(id));
    this.#inFlight.set(id, work);
    return work;
  }

  /** Aborts the copies in progress and waits for them to end. */
  async close(): Promise<void> {
    this.#closing.abort();
    await Promise.allSettled([...this.#inFlight.values()]);
  }

  /** How many copies this process is making now. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  async #ensure(fileId: string | CatalogFile, avoid: ReadonlySet<string>): Promise<CopiesOutcome> {
    const file = typeof fileId === 'string' ? await getCatalogFile(this.#deps.db, fileId) : fileId;
    if (!file) return { verified: 0, required: this.#required };
    for (;;) {
      const copies = await listCopies(this.#deps.db, file.file_id);
      const verified = copies.filter((c) => c.state === 'verified' && !avoid.has(c.storage_id)).length;
      if (verified >= this.#required || this.#closing.signal.aborted) return { verified, required: this.#required };
      try {
        await addCopy(this.#deps, file, { avoidStorageIds: avoid, signal: this.#closing.signal });
      } catch (error) {
        // No place for a copy (a datacenter down, the fleet full) is expected during an outage: not a warning each scan.
        const code = error instanceof PolyvisionError ? error.code : undefined;
        const expected = code === 'replica_not_placeable' || code === 'insufficient_storage';
        this.#logger[expected ? 'debug' : 'warn']({ err: error, file_id: file.file_id }, 'copy not made');
        return { verified, required: this.#required, error };
      }
    }
  }
}
