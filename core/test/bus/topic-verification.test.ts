import { randomBytes } from 'node:crypto';
import { type Logger, PolyvisionError } from '@polyvision/shared';
import { afterEach, describe, expect, it } from 'vitest';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.ts';
import { MemoryBus } from '../../src/bus/memory/memory-bus.ts';
import type { MessageBus } from '../../src/bus/message-bus.ts';
import { PlatformaticBus } from '../../src/bus/platformatic/platformatic-bus.ts';
import { ensurePolyvisionTopics, polyvisionTopicSpecs } from '../../src/bus/topics.ts';

const kafkaBrokers = process.env.KAFKA_BROKERS;
const drivers: Array<{ name: string; make: () => MessageBus; skip: boolean }> = [
  { name: 'memory', make: () => new MemoryBus(), skip: false },
  {
    name: 'kafka (platformatic)',
    make: () => new PlatformaticBus({ brokers: (kafkaBrokers ?? '').split(','), clientId: 'topic-verification-test' }),
    skip: !kafkaBrokers,
  },
  {
    name: 'kafka (kafkajs)',
    make: () => new KafkaBus({ brokers: (kafkaBrokers ?? '').split(','), clientId: 'topic-verification-test' }),
    skip: !kafkaBrokers,
  },
];

/** A logger that keeps its warnings' messages. */
function capturingLogger() {
  const lines: Array<{ msg: string; topic?: string }> = [];
  const logger = {
    warn: (fields: { topic?: string }, msg: string) => void lines.push({ ...fields, msg }),
  } as unknown as Logger;
  return { logger, lines };
}

for (const driver of drivers) {
  describe.skipIf(driver.skip)(`topic verification at start (${driver.name})`, () => {
    let bus: MessageBus;
    let prefix: string;
    afterEach(async () => {
      await bus.deleteTopics(polyvisionTopicSpecs(prefix).map((s) => s.topic)).catch(() => {});
      await bus.close();
    });

    function world() {
      bus = driver.make();
      prefix = `tv${randomBytes(5).toString('hex')}`;
      return { commands: `${prefix}.jobs.commands`, detect: `${prefix}.tasks.detect` };
    }

    it('creates the missing topics with the design partition counts, and finds them right the next time', async () => {
      world();
      const first = await ensurePolyvisionTopics(bus, prefix);
      expect(first.every((t) => t.action === 'created')).toBe(true);
      const again = await ensurePolyvisionTopics(bus, prefix);
      expect(again.every((t) => t.action === 'ok')).toBe(true);
      const states = await bus.describeTopics([`${prefix}.jobs.commands`]);
      expect(states.get(`${prefix}.jobs.commands`)?.partitions).toBe(12);
    });

    it('grows an auto-created 1-partition commands topic that was never written to, and says so', async () => {
      const { commands } = world();
      await bus.ensureTopics([{ topic: commands, partitions: 1 }]); // as broker auto-creation leaves it
      const { logger, lines } = capturingLogger();
      const report = await ensurePolyvisionTopics(bus, prefix, logger);
      expect(report.find((t) => t.topic === commands)).toMatchObject({
        action: 'grown',
        foundPartitions: 1,
        partitions: 12,
      });
      expect((await bus.describeTopics([commands])).get(commands)?.partitions).toBe(12);
      expect(lines.some((l) => l.topic === commands && l.msg.includes('auto.create.topics.enable=false'))).toBe(true);
    });

    it('grows a task topic even when it holds messages (tasks are not placed by a stored partition)', async () => {
      const { detect } = world();
      await bus.ensureTopics([{ topic: detect, partitions: 1 }]);
      const producer = bus.createProducer();
      await producer.send(detect, [{ key: 'acme:m', value: '{}' }]);
      await producer.close();
      const report = await ensurePolyvisionTopics(bus, prefix);
      expect(report.find((t) => t.topic === detect)).toMatchObject({ action: 'grown', partitions: 12 });
    });

    it('refuses to start on a commands topic with messages and the wrong partition count, saying what to do', async () => {
      const { commands } = world();
      await bus.ensureTopics([{ topic: commands, partitions: 1 }]);
      const producer = bus.createProducer();
      await producer.send(commands, [{ key: 'acme:m', value: '{}' }]);
      await producer.close();
      const error = await ensurePolyvisionTopics(bus, prefix).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PolyvisionError);
      expect(error).toMatchObject({ code: 'topic_partitions_mismatch', retriable: false });
      const message = (error as Error).message;
      expect(message).toContain(`topic ${commands} has 1 partition(s) but Polyvision needs exactly 12`);
      expect(message).toContain(`--delete --topic ${commands}`);
      expect(message).toContain('auto.create.topics.enable=false');
      expect((await bus.describeTopics([commands])).get(commands)?.partitions).toBe(1);
    });

    it('refuses a commands topic with more partitions than the contract (they cannot be removed)', async () => {
      const { commands } = world();
      await bus.ensureTopics([{ topic: commands, partitions: 16 }]);
      await expect(ensurePolyvisionTopics(bus, prefix)).rejects.toMatchObject({ code: 'topic_partitions_mismatch' });
    });
  });
}
