import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestKafka, type TestKafka, waitFor } from '../../../test/support/index.ts';
import type { Assignment, BusConsumer, MessageBus } from '../../src/bus/message-bus.ts';
import { PlatformaticBus } from '../../src/bus/platformatic/platformatic-bus.ts';

const kafkaBrokers = process.env.KAFKA_BROKERS;

/** The broker's default minimum session timeout is 6 s (the project's template lowers it to 1 s). */
const SESSION_TIMEOUT_MS = 6_000;
/** A handler three session timeouts long that never calls `context.heartbeat()`. */
const HANDLER_MS = 3 * SESSION_TIMEOUT_MS;

describe.skipIf(!kafkaBrokers)('background heartbeats (@platformatic/kafka)', () => {
  let bus: MessageBus | undefined;
  let kafka: TestKafka | undefined;
  const consumers: BusConsumer[] = [];
  afterEach(async () => {
    await Promise.allSettled(consumers.splice(0).map((c) => c.close()));
    await bus?.close();
    await kafka?.close();
  });

  it('keeps a member whose handler runs longer than the session timeout in its group', async () => {
    kafka = await createTestKafka();
    bus = new PlatformaticBus({ brokers: kafkaBrokers!.split(','), clientId: 'background-heartbeats-test' });
    const topic = await kafka.createTopic('heartbeats', 2);
    const groupId = kafka.groupId('heartbeats');
    const assignments: Assignment[] = [];
    const handled: Array<{ value: string; startedMs: number; endedMs: number }> = [];
    const consumer = bus.createConsumer({
      groupId,
      topics: [topic],
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      heartbeatIntervalMs: 500,
      onAssigned: (assignment) => {
        assignments.push(assignment);
      },
    });
    consumers.push(consumer);
    await consumer.run({
      eachMessage: async (record) => {
        const startedMs = Date.now();
        if (record.value === 'long') await sleep(HANDLER_MS); // no context.heartbeat(): the client's timer must do it
        handled.push({ value: record.value, startedMs, endedMs: Date.now() });
      },
    });
    await waitFor(() => assignments.length === 1, { timeoutMs: 30_000 });
    const membersOf = async () => {
      const { groups } = await kafka!.admin.describeGroups([groupId]);
      return { state: groups[0]?.state, members: (groups[0]?.members ?? []).map((m) => m.memberId) };
    };
    const before = await membersOf();
    expect(before.members).toHaveLength(1);

    const producer = bus.createProducer();
    await producer.send(topic, [{ key: 'match-1', value: 'long' }]);
    await waitFor(() => handled.length === 1, { timeoutMs: HANDLER_MS + 30_000 });
    expect(handled[0]!.endedMs - handled[0]!.startedMs).toBeGreaterThanOrEqual(HANDLER_MS - 100);
    // Same member, never evicted or rejoined, and the group still works after the long handler.
    expect(await membersOf()).toEqual({ state: 'Stable', members: before.members });
    expect(assignments).toHaveLength(1);
    await producer.send(topic, [{ key: 'match-1', value: 'after' }]);
    await waitFor(() => handled.length === 2, { timeoutMs: 30_000 });
    expect(handled.map((h) => h.value)).toEqual(['long', 'after']);
    await waitFor(async () => [...(await bus!.groupLag(groupId, topic)).values()].every((lag) => lag === 0));
    await producer.close();
  });
});
