import type { Database, Queryable } from '../../db/database.ts';
import { PartitionFencedError } from '../errors.ts';

/**
 * Fencing of the commands partitions (table `partition_owners`).
 *
 * When the consumer group assigns a partition to this replica, `claim` bumps
 * the partition's epoch and records this replica as owner. Every state
 * transaction starts with `assertOwner`, which reads the row `FOR SHARE`:
 * the transaction proceeds only if the epoch is still this replica's, and a
 * concurrent claim (an UPDATE) waits until that transaction ends. So once the
 * new owner's claim has committed, the old owner can no longer commit state
 * for the partition's jobs — whatever Kafka still lets it read.
 */
export class PartitionOwnership {
  readonly #db: Database;
  readonly #group: string;
  readonly #topic: string;
  readonly #owner: string;

  constructor(db: Database, options: { consumerGroup: string; topic: string; owner: string }) {
    this.#db = db;
    this.#group = options.consumerGroup;
    this.#topic = options.topic;
    this.#owner = options.owner;
  }

  /**
   * Takes `partition` for this replica.
   *
   * @returns the new epoch (the fencing token of this ownership).
   * @throws PolyvisionError `db_error` (retriable) when the database is unreachable.
   */
  async claim(partition: number): Promise<number> {
    const result = await this.#db.query<{ epoch: string }>(
      `INSERT INTO partition_owners (consumer_group, topic, partition, epoch, owner)
       VALUES ($1, $2, $3, 1, $4)
       ON CONFLICT (consumer_group, topic, partition)
       DO UPDATE SET epoch = partition_owners.epoch + 1, owner = EXCLUDED.owner, claimed_at = now()
       RETURNING epoch`,
      [this.#group, this.#topic, partition, this.#owner],
    );
    return Number(result.rows[0]!.epoch);
  }

  /**
   * Inside a transaction: proceeds only while `epoch` is the partition's current epoch.
   *
   * @throws PartitionFencedError when another replica has claimed the partition since.
   */
  async assertOwner(tx: Queryable, partition: number, epoch: number): Promise<void> {
    const result = await tx.query<{ epoch: string }>(
      `SELECT epoch FROM partition_owners WHERE consumer_group = $1 AND topic = $2 AND partition = $3 FOR SHARE`,
      [this.#group, this.#topic, partition],
    );
    const current = result.rows[0] ? Number(result.rows[0].epoch) : null;
    if (current !== epoch) throw new PartitionFencedError(partition, epoch, current);
  }

  /**
   * Records that this replica could not claim `partition` (table
   * `partition_claim_problems`, read by the ops page): `failures` so far since
   * `sinceMs` (epoch ms), the last error. Refreshes `updated_at`.
   *
   * @throws the database error (the caller logs it: the claim's own retry goes on).
   */
  async reportProblem(partition: number, problem: { failures: number; sinceMs: number; error: string }): Promise<void> {
    await this.#db.query(
      `INSERT INTO partition_claim_problems (consumer_group, topic, partition, owner, failures, since, error)
       VALUES ($1, $2, $3, $4, $5, to_timestamp($6 / 1000.0), $7)
       ON CONFLICT (consumer_group, topic, partition, owner)
       DO UPDATE SET failures = EXCLUDED.failures, since = EXCLUDED.since, error = EXCLUDED.error, updated_at = now()`,
      [
        this.#group,
        this.#topic,
        partition,
        this.#owner,
        problem.failures,
        problem.sinceMs,
        problem.error.slice(0, 500),
      ],
    );
  }

  /**
   * Deletes this replica's claim problems: for `partition`, or all of them.
   *
   * @throws the database error.
   */
  async clearProblems(partition?: number): Promise<void> {
    await this.#db.query(
      `DELETE FROM partition_claim_problems
        WHERE consumer_group = $1 AND topic = $2 AND owner = $3 AND ($4::integer IS NULL OR partition = $4)`,
      [this.#group, this.#topic, this.#owner, partition ?? null],
    );
  }

  /** Current owners, for operators (`jobs` CLI, tests). */
  async owners(): Promise<Array<{ partition: number; epoch: number; owner: string }>> {
    const result = await this.#db.query<{ partition: number; epoch: string; owner: string }>(
      `SELECT partition, epoch, owner FROM partition_owners WHERE consumer_group = $1 AND topic = $2 ORDER BY partition`,
      [this.#group, this.#topic],
    );
    return result.rows.map((r) => ({ partition: r.partition, epoch: Number(r.epoch), owner: r.owner }));
  }
}
