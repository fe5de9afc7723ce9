import type { Queryable } from '../../db/database.ts';

/** One message to publish after the transaction commits. */
export interface OutboxMessage {
  topic: string;
  key: string;
  payload: Record<string, unknown>;
  /** Publish no earlier than this many milliseconds after commit (retry backoff). @defaultValue 0 */
  delayMs?: number;
}

/**
 * Writes outbox rows in the caller's transaction: they become visible to the
 * relay exactly when the state change that caused them commits
 * (transactional outbox; STYLE.md habit 6).
 *
 * @param commandsPartition - the commands partition of the job: only its owner relays the rows.
 */
export async function enqueueOutbox(
  tx: Queryable,
  commandsPartition: number,
  messages: readonly OutboxMessage[],
): Promise<void> {
  if (messages.length === 0) return;
  const values: unknown[] = [];
  const rows = messages.map((message, i) => {
    values.push(commandsPartition, message.topic, message.key, JSON.stringify(message.payload), message.delayMs ?? 0);
    const p = i * 5;
    return `($${p + 1}, $${p + 2}, $${p + 3}, $${p + 4}::jsonb, now() + ($${p + 5}::double precision * interval '1 millisecond'))`;
  });
  await tx.query(
    `INSERT INTO outbox (commands_partition, topic, message_key, payload, available_at) VALUES ${rows.join(', ')}`,
    values,
  );
}
