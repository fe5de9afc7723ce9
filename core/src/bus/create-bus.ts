import { KafkaBus } from './kafka/kafka-bus.ts';
import { MemoryBus } from './memory/memory-bus.ts';
import type { MessageBus } from './message-bus.ts';

/**
 * The real driver when `KAFKA_BROKERS` is set (comma-separated `host:port`),
 * otherwise the in-memory one (DESIGN.md, "Embedded default and real services").
 */
export function createMessageBus(kafkaBrokers: string | undefined, clientId = 'polyvision'): MessageBus {
  const brokers = (kafkaBrokers ?? '')
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
  return brokers.length > 0 ? new KafkaBus({ brokers, clientId }) : new MemoryBus({ defaultPartitions: 12 });
}
