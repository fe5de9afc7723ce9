import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/index.ts';
import type { BusConsumer, MessageBus } from '../../src/bus/message-bus.ts';
import { PlatformaticBus } from '../../src/bus/platformatic/platformatic-bus.ts';

const kafkaBrokers = process.env.KAFKA_BROKERS;

describe.skipIf(!kafkaBrokers)('a session timeout below the broker minimum (@platformatic/kafka)', () => {
  let bus: MessageBus | undefined;
  const consumers: BusConsumer[] = [];
  const topics: string[] = [];
  afterEach(async () => {
    await Promise.allSettled(consumers.splice(0).map((c) => c.close()));
    await bus?.deleteTopics(topics.splice(0)).catch(() => {});
    await bus?.close();
  });

  it('joins with the broker minimum and says so in a process warning, instead of failing', async () => {
    bus = new PlatformaticBus({ brokers: kafkaBrokers!.split(','), clientId: 'session-floor-test' });
    const topic = `session-floor-${Date.now()}`;
    topics.push(topic);
    await bus.ensureTopics([{ topic, partitions: 1 }]);
    const warnings: string[] = [];
    const onWarning = (warning: Error & { code?: string }) => {
      if (warning.code === 'POLYVISION_KAFKA_SESSION_TIMEOUT') warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    try {
      // 500 ms: below every broker's minimum (Kafka's default 6 s, the project's template 1 s).
      const consumer = bus.createConsumer({
        groupId: `session-floor-${Date.now()}`,
        topics: [topic],
        sessionTimeoutMs: 500,
      });
      consumers.push(consumer);
      const seen: string[] = [];
      await consumer.run({
        eachMessage: async (record) => {
          seen.push(record.value);
        },
      });
      const producer = bus.createProducer();
      await producer.send(topic, [{ key: 'k', value: 'v' }]);
      await waitFor(() => seen.length === 1 && warnings.length === 1, { timeoutMs: 30_000 });
      expect(warnings[0]).toMatch(
        /session timeout 500 ms is below the broker's group\.min\.session\.timeout\.ms \(\d+ ms\)/,
      );
      await producer.close();
    } finally {
      process.off('warning', onWarning);
    }
  });
});
