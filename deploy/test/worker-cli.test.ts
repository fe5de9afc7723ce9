import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestSchema, serviceUrl, spawnTracked, type TestSchema, uniqueName } from '../../test/support/index.ts';

const CLI = new URL('../src/cli/main.ts', import.meta.url).pathname;

let schema: TestSchema;
beforeAll(async () => {
  schema = await createTestSchema();
});
afterAll(async () => {
  await schema.close();
});

describe('polyvision worker', () => {
  it('exits non-zero with the stage error, leaving no open connection, when a stage cannot load', async () => {
    const child = spawnTracked(process.execPath, [CLI, 'worker', '--stages', 'detect'], {
      env: {
        ...process.env,
        KAFKA_BROKERS: serviceUrl('KAFKA_BROKERS'),
        DATABASE_URL: serviceUrl('DATABASE_URL'),
        DATABASE_SCHEMA: schema.schema,
        POLYVISION_TOPIC_PREFIX: uniqueName('pv-worker-cli'),
        DETECT_MODEL_PATH: '/nonexistent/model.onnx',
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    expect(stderr).toMatch(/model_not_found/);
  }, 90_000);
});
