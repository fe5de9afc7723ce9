import { randomBytes } from 'node:crypto';
import { jobSubmitSchema, silentLogger } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceUrl, uniqueName, waitFor } from '../../../test/support/index.ts';
import { type BusRecord, createMessageBus, type MessageBus, partitionForKey } from '../../src/bus/index.ts';
import { createEdgeToken, type RunningIngest } from '../../src/ingest/index.ts';
import { OutboxRelay } from '../../src/orchestrator/outbox/outbox-relay.ts';
import { metadataFor, sha256Hex, TusClient, testBytes } from './support/harness.ts';
import { type IngestWorld, startIngestWorld } from './support/world.ts';

/**
 * The panorama's `job.submit` leaves through the orchestrator's outbox relay
 * to real Kafka with the match key, on the partition Kafka's partitioner
 * gives that key.
 */
let world: IngestWorld;
let ingest: RunningIngest;
let bus: MessageBus;
const prefix = `it${randomBytes(4).toString('hex')}`;
const topic = `${prefix}.jobs.commands`;

beforeAll(async () => {
  world = await startIngestWorld({
    name: 'ingest_kafka',
    ses: [{ id: 'se-k', location: 'dc1' }],
    env: { POLYVISION_TOPIC_PREFIX: prefix },
  });
  ingest = world.ingest;
  bus = createMessageBus(serviceUrl('KAFKA_BROKERS'), uniqueName('ingest-test'));
  await bus.ensureTopics([{ topic, partitions: 12 }]);
});

afterAll(async () => {
  await world?.close();
  await bus?.deleteTopics([topic]).catch(() => undefined);
  await bus?.close();
});

describe('job.submit on Kafka', () => {
  it('is published once, keyed by organization:match, with the stored panorama as input', async () => {
    const { token } = await createEdgeToken(ingest.db, 'acme');
    const tus = new TusClient(ingest.url, token);
    const bytes = testBytes(500_000, 31);
    const path = await tus.createOk(bytes.length, metadataFor(bytes, { match_id: 'm-kafka' }));
    expect((await tus.send(path, bytes)).status).toBe(204);

    const producer = bus.createProducer();
    const relay = new OutboxRelay({
      db: ingest.db,
      producer,
      partitions: () => Array.from({ length: 12 }, (_, i) => i),
      batchSize: 100,
      pollIntervalMs: 100,
      logger: silentLogger,
    });
    expect(await relay.publishDue()).toBe(1);
    expect(await relay.publishDue()).toBe(0);
    await producer.close();

    const received: BusRecord[] = [];
    const consumer = bus.createConsumer({ groupId: uniqueName('g'), topics: [topic], fromBeginning: true });
    await consumer.run({
      eachMessage: async (record) => {
        received.push(record);
      },
    });
    try {
      await waitFor(() => received.length >= 1, { timeoutMs: 30_000 });
    } finally {
      await consumer.close();
    }
    expect(received).toHaveLength(1);
    const record = received[0] as BusRecord;
    expect(record.key).toBe('acme:m-kafka');
    expect(record.partition).toBe(partitionForKey('acme:m-kafka', 12));
    const message = jobSubmitSchema.parse(JSON.parse(record.value));
    expect(message.job_id).toBe(`job-${path.split('/').pop()}`);
    expect(message.inputs[0]).toMatchObject({ kind: 'panorama', storage_id: 'se-k', sha256: sha256Hex(bytes) });
  });
});
