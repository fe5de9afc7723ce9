import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/index.ts';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.ts';
import { MemoryBus } from '../../src/bus/memory/memory-bus.ts';
import type { Assignment, BusConsumer, BusRecord, MessageBus } from '../../src/bus/message-bus.ts';
import { partitionForKey } from '../../src/bus/murmur2.ts';
import { PlatformaticBus } from '../../src/bus/platformatic/platformatic-bus.ts';

const kafkaBrokers = process.env.KAFKA_BROKERS;

const drivers: Array<{ name: string; make: () => MessageBus; skip: boolean; sessionTimeoutMs: number }> = [
  { name: 'memory', make: () => new MemoryBus({ defaultPartitions: 4 }), skip: false, sessionTimeoutMs: 6_000 },
  {
    name: 'kafka (platformatic)',
    make: () => new PlatformaticBus({ brokers: (kafkaBrokers ?? '').split(','), clientId: 'bus-test' }),
    skip: !kafkaBrokers,
    sessionTimeoutMs: 6_000,
  },
  {
    name: 'kafka (kafkajs)',
    make: () => new KafkaBus({ brokers: (kafkaBrokers ?? '').split(','), clientId: 'bus-test' }),
    skip: !kafkaBrokers,
    sessionTimeoutMs: 6_000,
  },
];

for (const driver of drivers) {
  describe.skipIf(driver.skip)(`MessageBus conformance: ${driver.name}`, () => {
    let bus: MessageBus;
    const consumers: BusConsumer[] = [];
    const topics: string[] = [];

    async function freshTopic(partitions = 4) {
      const topic = `bus-test-${randomUUID()}`;
      topics.push(topic);
      await bus.ensureTopics([{ topic, partitions }]);
      return topic;
    }

    function consumer(groupId: string, topic: string, onAssigned?: (a: Assignment) => void) {
      const c = bus.createConsumer({
        groupId,
        topics: [topic],
        sessionTimeoutMs: driver.sessionTimeoutMs,
        heartbeatIntervalMs: 500,
        retryBackoffMs: 50,
        onAssigned,
      });
      consumers.push(c);
      return c;
    }

    afterEach(async () => {
      await Promise.allSettled(consumers.splice(0).map((c) => c.close()));
      await bus.deleteTopics(topics.splice(0)).catch(() => {});
      await bus.close();
    });

    it('partitions by key like Kafka and keeps per-key order', async () => {
      bus = driver.make();
      const topic = await freshTopic(4);
      const producer = bus.createProducer();
      const keys = Array.from({ length: 8 }, (_, i) => `org-${i}:match-${i}`);
      for (let n = 0; n < 5; n++) {
        await producer.send(
          topic,
          keys.map((key) => ({ key, value: String(n) })),
        );
      }
      const seen: BusRecord[] = [];
      await consumer(`g-${randomUUID()}`, topic).run({
        eachMessage: async (record) => {
          seen.push(record);
        },
      });
      // At least: a producer that re-sent a batch would make more than 40, and the order check below says so.
      await waitFor(() => seen.length >= 40, { timeoutMs: 20_000 });
      for (const key of keys) {
        const mine = seen.filter((r) => r.key === key);
        expect(mine.map((r) => r.value)).toEqual(['0', '1', '2', '3', '4']);
        expect(new Set(mine.map((r) => r.partition))).toEqual(new Set([partitionForKey(key, 4)]));
      }
      await producer.close();
    });

    it('hands a message again when its handler throws, without moving past it', async () => {
      bus = driver.make();
      const topic = await freshTopic(1);
      const producer = bus.createProducer();
      await producer.send(topic, [
        { key: 'k', value: 'a' },
        { key: 'k', value: 'b' },
      ]);
      const seen: string[] = [];
      let failures = 0;
      await consumer(`g-${randomUUID()}`, topic).run({
        eachMessage: async (record) => {
          if (record.value === 'a' && failures < 2) {
            failures += 1;
            throw new Error('transient');
          }
          seen.push(record.value);
        },
      });
      await waitFor(() => seen.length === 2, { timeoutMs: 20_000 });
      expect(seen).toEqual(['a', 'b']);
      expect(failures).toBe(2);
      await producer.close();
    });

    it('rebalances when a member joins and leaves; uncommitted messages reach the new owner', async () => {
      bus = driver.make();
      const topic = await freshTopic(4);
      const groupId = `g-${randomUUID()}`;
      const assignments = new Map<string, number[]>();
      const seenBy = new Map<string, string[]>();
      const first = consumer(groupId, topic, (a) => assignments.set('first', a.partitions[topic] ?? []));
      await first.run({
        eachMessage: async (record) => {
          seenBy.set('first', [...(seenBy.get('first') ?? []), record.value]);
        },
      });
      await waitFor(() => assignments.get('first')?.length === 4, { timeoutMs: 30_000 });
      const second = consumer(groupId, topic, (a) => assignments.set('second', a.partitions[topic] ?? []));
      await second.run({
        eachMessage: async (record) => {
          seenBy.set('second', [...(seenBy.get('second') ?? []), record.value]);
        },
      });
      await waitFor(() => assignments.get('first')?.length === 2 && assignments.get('second')?.length === 2, {
        timeoutMs: 30_000,
      });
      const owned = [...(assignments.get('first') ?? []), ...(assignments.get('second') ?? [])].sort();
      expect(owned).toEqual([0, 1, 2, 3]);
      await first.close();
      consumers.splice(consumers.indexOf(first), 1);
      await waitFor(() => assignments.get('second')?.length === 4, { timeoutMs: 30_000 });
      const producer = bus.createProducer();
      await producer.send(
        topic,
        Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })),
      );
      await waitFor(() => (seenBy.get('second') ?? []).length === 20, { timeoutMs: 20_000 });
      await producer.close();
    });

    it('reports lag as high watermark minus committed offset', async () => {
      bus = driver.make();
      const topic = await freshTopic(2);
      const producer = bus.createProducer();
      await producer.send(
        topic,
        Array.from({ length: 6 }, (_, i) => ({ key: `k${i}`, value: `${i}` })),
      );
      const groupId = `g-${randomUUID()}`;
      const before = await bus.groupLag(groupId, topic);
      expect([...before.values()].reduce((a, b) => a + b, 0)).toBe(6);
      let count = 0;
      await consumer(groupId, topic).run({
        eachMessage: async () => {
          count += 1;
        },
      });
      await waitFor(async () => {
        const lag = await bus.groupLag(groupId, topic);
        return count === 6 && [...lag.values()].every((v) => v === 0);
      });
      await producer.close();
    });
  });
}

describe('MemoryBus crash', () => {
  it('redelivers what a crashed member had not committed, and refuses its late commit', async () => {
    const bus = new MemoryBus();
    await bus.ensureTopics([{ topic: 't', partitions: 1 }]);
    const producer = bus.createProducer();
    await producer.send('t', [{ key: 'k', value: 'one' }]);
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => {
      release = resolve;
    });
    const zombie = bus.createConsumer({ groupId: 'g', topics: ['t'] });
    const zombieSaw: string[] = [];
    await zombie.run({
      eachMessage: async (record) => {
        zombieSaw.push(record.value);
        await blocked;
      },
    });
    await waitFor(() => zombieSaw.length === 1);
    await zombie.simulateCrash();
    const survivorSaw: string[] = [];
    const survivor = bus.createConsumer({ groupId: 'g', topics: ['t'] });
    await survivor.run({
      eachMessage: async (record) => {
        survivorSaw.push(record.value);
      },
    });
    await waitFor(() => survivorSaw.length === 1);
    release();
    await producer.send('t', [{ key: 'k', value: 'two' }]);
    await waitFor(() => survivorSaw.length === 2);
    expect(survivorSaw).toEqual(['one', 'two']);
    expect(zombieSaw).toEqual(['one']);
    expect([...(await bus.groupLag('g', 't')).values()]).toEqual([0]);
    await survivor.close();
  });
});
