import { ConfigError, createLogger } from '@polyvision/shared';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/index.ts';
import { JobCommandClient } from '../../src/orchestrator/job-command-client.ts';
import { loadOrchestratorConfig } from '../../src/orchestrator/service/orchestrator-config.ts';
import { startOrchestratorService } from '../../src/orchestrator/service/orchestrator-service.ts';
import { PgStageClaimStore } from '../../src/workers/runtime/stage-claims.ts';
import { countingStage, ensureExecutionsTable } from '../../src/workers/runtime/testing/counting-stage.ts';
import { WorkerRuntime } from '../../src/workers/runtime/worker-runtime.ts';
import { PANORAMA } from './support/harness.ts';

describe('orchestrator service (embedded: in-memory bus, PGlite)', () => {
  it('refuses a bad variable, naming it', () => {
    expect(() => loadOrchestratorConfig({ ORCHESTRATOR_HTTP_PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadOrchestratorConfig({ ORCHESTRATOR_SESSION_TIMEOUT_MS: '10' })).toThrow(
      /ORCHESTRATOR_SESSION_TIMEOUT_MS/,
    );
    expect(loadOrchestratorConfig({}).ORCHESTRATOR_SESSION_TIMEOUT_MS).toBe(3_000);
  });

  it('serves jobs, health and the seed metrics; a job runs end to end', async () => {
    const operatorToken = 'operator-token-0123456789abcdef';
    const auth = { headers: { authorization: `Bearer ${operatorToken}` } };
    const config = loadOrchestratorConfig({
      ORCHESTRATOR_HTTP_PORT: '0',
      POLYVISION_TOPIC_PREFIX: 'svc',
      OPS_TOKENS: operatorToken,
    });
    const service = await startOrchestratorService(config, createLogger('test'));
    const { bus, db } = service.connections;
    await ensureExecutionsTable(db);
    const worker = new WorkerRuntime({
      bus,
      topicPrefix: 'svc',
      claims: new PgStageClaimStore(db),
      handlers: (['detect', 'track', 'vcam', 'analyze', 'encode'] as const).map((stage) =>
        countingStage(stage, { db, sleepMs: 5 }),
      ),
    });
    await worker.start();
    const producer = bus.createProducer();
    try {
      const ready = await waitFor(async () => {
        const response = await fetch(`${service.http.url}/health/ready`);
        return response.status === 200 ? response : null;
      });
      expect(await ready.json()).toMatchObject({ status: 'ok' });
      const client = new JobCommandClient(producer, 'svc');
      const jobId = await client.submit({ organization_id: 'acme', match_id: 'svc-1', inputs: [PANORAMA] });
      await client.submit({ job_id: jobId, organization_id: 'acme', match_id: 'svc-1', inputs: [PANORAMA] });
      const job = await waitFor(
        async () => {
          const response = await fetch(`${service.http.url}/api/v1/jobs/${jobId}`, auth);
          const body = (await response.json()) as { status: string };
          return body.status === 'completed' ? body : null;
        },
        { timeoutMs: 30_000 },
      );
      expect(job).toMatchObject({ job_id: jobId, progress_percent: 100 });
      const metrics = await waitFor(
        async () => {
          const text = await (await fetch(`${service.http.url}/metrics`, auth)).text();
          return text.includes('polyvision_orchestrator_consumer_lag{') ? text : null;
        },
        { timeoutMs: 15_000 },
      );
      expect(metrics).toMatch(/polyvision_orchestrator_rebalance_count\{[^}]*\} 1/);
      expect(metrics).toMatch(
        /polyvision_orchestrator_job_processing_time_seconds_count\{[^}]*status="completed"[^}]*\} 1/,
      );
      expect(metrics).toMatch(/polyvision_orchestrator_idempotency_hits\{[^}]*source="(redis|database)"[^}]*\} 1/);
      expect(metrics).toMatch(/polyvision_orchestrator_owned_partitions\{[^}]*\} 12/);
    } finally {
      await producer.close();
      await worker.close();
      await service.close();
    }
  });
});
