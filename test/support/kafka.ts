import { type Admin, Kafka, type KafkaConfig, logLevel } from 'kafkajs';
import { serviceUrl } from './service-env.ts';
import { uniqueName } from './unique-name.ts';

/** A Kafka client for one test file that makes topics and groups of its own. */
export interface TestKafka {
  kafka: Kafka;
  /** KAFKA_BROKERS split on commas. */
  brokers: string[];
  admin: Admin;
  /** Creates a topic with a unique name (waits for its leaders) and returns the name; deleted by close(). */
  createTopic(name?: string, numPartitions?: number): Promise<string>;
  /** A unique consumer group id. */
  groupId(name?: string): string;
  /** Deletes the topics made here and disconnects the admin client. Disconnect your producers/consumers first. */
  close(): Promise<void>;
}

/**
 * Connects an admin client to the real Kafka at KAFKA_BROKERS.
 *
 * @param config - extra kafkajs options; logging is off unless `logLevel` is given
 *   (a fresh group's first join logs "group coordinator not available" at ERROR, which is normal).
 */
export async function createTestKafka(config: Partial<KafkaConfig> = {}): Promise<TestKafka> {
  const brokers = serviceUrl('KAFKA_BROKERS').split(',');
  const kafka = new Kafka({ clientId: uniqueName('test'), brokers, logLevel: logLevel.NOTHING, ...config });
  const admin = kafka.admin();
  await admin.connect();
  const topics: string[] = [];
  return {
    kafka,
    brokers,
    admin,
    async createTopic(name = 'topic', numPartitions = 1) {
      const topic = uniqueName(name);
      await admin.createTopics({ topics: [{ topic, numPartitions }], waitForLeaders: true });
      topics.push(topic);
      return topic;
    },
    groupId: (name = 'group') => uniqueName(name),
    async close() {
      try {
        if (topics.length > 0) await admin.deleteTopics({ topics, timeout: 10_000 });
      } finally {
        await admin.disconnect();
      }
    },
  };
}
