import { ConfigError } from '@polyvision/shared';
import { KafkaBus } from './kafka/kafka-bus.ts';
import { MemoryBus } from './memory/memory-bus.ts';
import type { MessageBus } from './message-bus.ts';
import { PlatformaticBus } from './platformatic/platformatic-bus.ts';

/** The Kafka clients the bus can drive (`KAFKA_CLIENT`). */
export const KAFKA_CLIENTS = ['platformatic', 'kafkajs'] as const;
export type KafkaClientName = (typeof KAFKA_CLIENTS)[number];

/**
 * The Kafka client named by `value` (`KAFKA_CLIENT`): `platformatic`
 * (`@platformatic/kafka`, the default: background heartbeats) or `kafkajs`
 * (the previous client, kept selectable).
 *
 * @throws ConfigError naming `KAFKA_CLIENT` for any other value.
 */
export function kafkaClientName(value: string | undefined): KafkaClientName {
  const name = (value ?? '').trim() || 'platformatic';
  if (!(KAFKA_CLIENTS as readonly string[]).includes(name)) {
    throw new ConfigError('KAFKA_CLIENT', `"${name}" is not a Kafka client; use one of ${KAFKA_CLIENTS.join(', ')}`);
  }
  return name as KafkaClientName;
}

/**
 * The real driver when `KAFKA_BROKERS` is set (comma-separated `host:port`),
 * otherwise the in-memory one (DESIGN.md, "Embedded default and real services").
 *
 * @param client - the Kafka client; @defaultValue `KAFKA_CLIENT` from the environment, else `platformatic`.
 * @throws ConfigError naming `KAFKA_CLIENT` when it names no known client.
 */
export function createMessageBus(
  kafkaBrokers: string | undefined,
  clientId = 'polyvision',
  client: KafkaClientName | string | undefined = process.env.KAFKA_CLIENT,
): MessageBus {
  const brokers = (kafkaBrokers ?? '')
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
  if (brokers.length === 0) return new MemoryBus({ defaultPartitions: 12 });
  return kafkaClientName(client) === 'kafkajs'
    ? new KafkaBus({ brokers, clientId })
    : new PlatformaticBus({ brokers, clientId });
}
