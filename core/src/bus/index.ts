/**
 * The message bus: the `MessageBus` port (topics, keyed partitioning,
 * consumer groups with manual commit), its Kafka drivers (`@platformatic/kafka`,
 * the default, and kafkajs) and its in-memory driver, Kafka's murmur2 partitioner and the Polyvision topic set.
 */
export * from './create-bus.ts';
export * from './kafka/kafka-bus.ts';
export * from './memory/memory-bus.ts';
export * from './message-bus.ts';
export * from './murmur2.ts';
export * from './platformatic/platformatic-bus.ts';
export * from './topic-verification.ts';
export * from './topics.ts';
