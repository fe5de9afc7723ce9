/**
 * Rebalance time of a consumer group on the real broker, per Kafka client,
 * side by side in one run: 3 members × 12 partitions. Each round starts two
 * members and waits until they hold 6 partitions each, then
 *
 * - join: starts a third member and measures from its `run()` call until the
 *   three hold 4 partitions each (every member's `onAssigned`);
 * - leave: closes one member (graceful: it leaves the group) and measures from
 *   `close()` until the other two hold 6 each.
 *
 * Each client with the orchestrator's defaults it ships with: platformatic
 * session 3 s / heartbeat 0.5 s (needs `group.min.session.timeout.ms` ≤ 3000
 * on the broker), kafkajs 10 s / 1 s (its heartbeats go out between fetches,
 * and a fetch long-polls 5 s: at a 3 s session idle kafkajs members are
 * evicted over and over and the group never settles).
 *
 *   node bench/bus/rebalance.ts [--rounds 5] [--clients platformatic,kafkajs]
 */
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createMessageBus, type KafkaClientName, kafkaClientName } from '../../core/src/bus/create-bus.ts';
import type { BusConsumer, MessageBus } from '../../core/src/bus/message-bus.ts';
import { waitFor } from '../../test/support/index.ts';
import { serviceEnv, summarize } from '../orchestrator/world.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    clients: { type: 'string', default: 'platformatic,kafkajs' },
  },
});
const rounds = Number(values.rounds);
const clients = values.clients.split(',').map((c) => kafkaClientName(c));
const PARTITIONS = 12;
const SESSION: Record<KafkaClientName, { sessionTimeoutMs: number; heartbeatIntervalMs: number }> = {
  platformatic: { sessionTimeoutMs: 3_000, heartbeatIntervalMs: 500 },
  kafkajs: { sessionTimeoutMs: 10_000, heartbeatIntervalMs: 1_000 },
};

async function round(
  bus: MessageBus,
  topic: string,
  client: KafkaClientName,
): Promise<{ joinMs: number; leaveMs: number }> {
  const groupId = `rebalance-${randomUUID()}`;
  const held = new Map<number, number>();
  const members: BusConsumer[] = [];
  const start = async (index: number) => {
    const consumer = bus.createConsumer({
      groupId,
      topics: [topic],
      ...SESSION[client],
      // The latest assignment only (kafkajs reports revocations late): a round ends when every member got its new one.
      onAssigned: (a) => {
        held.set(index, (a.partitions[topic] ?? []).length);
      },
    });
    members[index] = consumer;
    await consumer.run({ eachMessage: async () => {} });
  };
  const holds = (counts: Record<number, number>) =>
    Object.entries(counts).every(([index, count]) => held.get(Number(index)) === count);
  try {
    await start(0);
    await start(1);
    await waitFor(() => holds({ 0: 6, 1: 6 }), {
      timeoutMs: 60_000,
      intervalMs: 5,
      message: `two members hold 6 each (held ${JSON.stringify([...held])})`,
    });
    const joinStart = performance.now();
    await start(2);
    await waitFor(() => holds({ 0: 4, 1: 4, 2: 4 }), {
      timeoutMs: 60_000,
      intervalMs: 5,
      message: `three members hold 4 each (held ${JSON.stringify([...held])})`,
    });
    const joinMs = performance.now() - joinStart;
    const leaveStart = performance.now();
    await members[2]!.close();
    held.delete(2);
    await waitFor(() => holds({ 0: 6, 1: 6 }), { timeoutMs: 60_000, intervalMs: 5 });
    const leaveMs = performance.now() - leaveStart;
    return { joinMs: Math.round(joinMs), leaveMs: Math.round(leaveMs) };
  } finally {
    await Promise.allSettled(members.map((m) => m.close()));
  }
}

const urls = await serviceEnv();
const results: Record<
  string,
  { join_ms: ReturnType<typeof summarize>; leave_ms: ReturnType<typeof summarize>; runs: unknown[] }
> = {};
const perClient = new Map<KafkaClientName, Array<{ joinMs: number; leaveMs: number }>>();
// Alternate the clients round by round so both see the same host load.
for (let r = 0; r < rounds; r++) {
  for (const client of clients) {
    const bus = createMessageBus(urls.kafka, `rebalance-bench-${client}`, client);
    const topic = `rebalance-bench-${randomUUID()}`;
    try {
      await bus.ensureTopics([{ topic, partitions: PARTITIONS }]);
      const measured = await round(bus, topic, client);
      perClient.set(client, [...(perClient.get(client) ?? []), measured]);
      process.stderr.write(`${client} round ${r + 1}: join ${measured.joinMs} ms, leave ${measured.leaveMs} ms\n`);
    } finally {
      await bus.deleteTopics([topic]).catch(() => {});
      await bus.close();
    }
  }
}
for (const [client, list] of perClient) {
  results[client] = {
    join_ms: summarize(list.map((m) => m.joinMs)),
    leave_ms: summarize(list.map((m) => m.leaveMs)),
    runs: list,
  };
}
const result = {
  measured_at: new Date().toISOString(),
  command: `node bench/bus/rebalance.ts --rounds ${rounds} --clients ${clients.join(',')}`,
  brokers: urls.kafka,
  members: 3,
  partitions: PARTITIONS,
  sessions: SESSION,
  load_average: (await import('node:os')).loadavg().map((l) => Math.round(l * 100) / 100),
  ...results,
};
const dir = new URL('../results/', import.meta.url);
await mkdir(dir, { recursive: true });
await writeFile(new URL('bus-rebalance.json', dir), `${JSON.stringify(result, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
process.exit(0);
