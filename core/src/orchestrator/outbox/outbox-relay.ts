import type { Logger } from '@polyvision/shared';
import type { BusProducer } from '../../bus/message-bus.ts';
import type { Database } from '../../db/database.ts';

/**
 * Publishes outbox rows of the partitions this replica owns, oldest first,
 * and marks them sent. Runs after every committed transaction (`kick`) and
 * every `pollIntervalMs` (delayed rows, rows a dead owner left unsent).
 *
 * At least once: a crash between publishing and marking republishes the rows
 * (the next owner picks them up); consumers deduplicate by `message_id`.
 */
export class OutboxRelay {
  readonly #db: Database;
  readonly #producer: BusProducer;
  readonly #partitions: () => number[];
  readonly #batchSize: number;
  readonly #pollIntervalMs: number;
  readonly #logger: Logger;
  readonly #onPublished: (count: number) => void;
  #kicked = false;
  #wake: () => void = () => {};
  #loop: Promise<void> | null = null;
  readonly #stop = new AbortController();

  constructor(options: {
    db: Database;
    producer: BusProducer;
    /** The commands partitions whose rows this replica publishes. */
    partitions: () => number[];
    batchSize: number;
    pollIntervalMs: number;
    logger: Logger;
    onPublished?: (count: number) => void;
  }) {
    this.#db = options.db;
    this.#producer = options.producer;
    this.#partitions = options.partitions;
    this.#batchSize = options.batchSize;
    this.#pollIntervalMs = options.pollIntervalMs;
    this.#logger = options.logger;
    this.#onPublished = options.onPublished ?? (() => {});
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Asks for a round now (a transaction just committed rows). */
  kick(): void {
    this.#kicked = true;
    this.#wake();
  }

  /** Publishes what is due once; returns the number of rows published. */
  async publishDue(): Promise<number> {
    const partitions = this.#partitions();
    if (partitions.length === 0) return 0;
    const rows = await this.#db.query<{ id: string; topic: string; message_key: string; payload: unknown }>(
      `SELECT id, topic, message_key, payload FROM outbox
       WHERE sent_at IS NULL AND commands_partition = ANY($1::int[]) AND available_at <= now()
       ORDER BY id LIMIT $2`,
      [partitions, this.#batchSize],
    );
    if (rows.rows.length === 0) return 0;
    const byTopic = new Map<string, Array<{ key: string; value: string }>>();
    for (const row of rows.rows) {
      const list = byTopic.get(row.topic) ?? [];
      list.push({
        key: row.message_key,
        value: typeof row.payload === 'string' ? row.payload : JSON.stringify(row.payload),
      });
      byTopic.set(row.topic, list);
    }
    await Promise.all([...byTopic].map(([topic, messages]) => this.#producer.send(topic, messages)));
    await this.#db.query(`UPDATE outbox SET sent_at = now() WHERE id = ANY($1::bigint[])`, [
      rows.rows.map((r) => r.id),
    ]);
    this.#onPublished(rows.rows.length);
    return rows.rows.length;
  }

  async close(): Promise<void> {
    this.#stop.abort();
    this.#wake();
    await this.#loop;
  }

  async #run(): Promise<void> {
    let failures = 0;
    while (!this.#stop.signal.aborted) {
      this.#kicked = false;
      let published = 0;
      try {
        published = await this.publishDue();
        failures = 0;
      } catch (error) {
        failures += 1;
        if (failures === 1 || failures % 20 === 0)
          this.#logger.warn({ err: error, failures }, 'outbox relay round failed');
      }
      if (this.#stop.signal.aborted) return;
      if (published >= this.#batchSize || (this.#kicked && failures === 0)) continue;
      const waitMs =
        failures > 0 ? Math.min(5_000, this.#pollIntervalMs * 2 ** Math.min(failures, 4)) : this.#pollIntervalMs;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
        if (this.#kicked || this.#stop.signal.aborted) this.#wake();
      });
    }
  }
}
