import type { DeadLetter } from '@polyvision/shared';
import type { BusProducer, BusRecord } from '../bus/message-bus.ts';

/**
 * Sends a message that can never be handled to the DLQ topic with the error
 * (shared contract `deadLetterSchema`), keyed like the original. The caller
 * then commits the original's offset so the partition moves on.
 */
export async function sendToDeadLetter(
  producer: BusProducer,
  dlqTopic: string,
  record: BusRecord,
  consumerGroup: string,
  error: { code: string; message: string },
): Promise<void> {
  const letter: DeadLetter = {
    original_topic: record.topic,
    partition: record.partition,
    offset: record.offset,
    key: record.key,
    value: record.value,
    value_encoding: 'utf8',
    error: { code: error.code, message: error.message.slice(0, 4096), retriable: false },
    consumer_group: consumerGroup,
    failed_at: new Date().toISOString(),
  };
  await producer.send(dlqTopic, [{ key: record.key ?? '', value: JSON.stringify(letter) }]);
}
