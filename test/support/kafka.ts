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

/**
 * Deletes what a system under test made in Kafka under a topic prefix: the
 * topics named `<prefix>.…` and the consumer groups whose id starts with
 * `prefix` (a group still in use is left). For tests that start whole
 * services, which create their own topics and groups.
 */
export async function deleteKafkaPrefix(prefix: string): Promise<void> {
  const kafka = new Kafka({ brokers: serviceUrl('KAFKA_BROKERS').split(','), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(`${prefix}.`));
    if (topics.length > 0) await admin.deleteTopics({ topics, timeout: 10_000 });
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(prefix));
    if (groups.length > 0) await admin.deleteGroups(groups).catch(() => {});
  } finally {
    await admin.disconnect();
  }
}
