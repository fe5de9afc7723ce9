/**
 * Vitest global setup (vitest.config.ts `globalSetup`): makes sure every test
 * file sees REDIS_URL, DATABASE_URL, KAFKA_BROKERS and S3_ENDPOINT (with
 * S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_REGION) of real services.
 *
 * - When all are set in the environment, they are used as they are.
 * - Otherwise `servicesUp()` (the same code as `pnpm polyvision services up`)
 *   starts what is not running: Redis, PostgreSQL, Kafka and S3 (versitygw)
 *   on private loopback ports, data in `.work/services/` (first run: installs
 *   missing Debian packages, downloads the Kafka jars and builds versitygw,
 *   about three minutes; later runs:
 *   a few seconds, or under a second when they already run). The missing
 *   variables are set in `process.env`, which vitest's workers inherit (they
 *   are forked after the global setup).
 * - `POLYVISION_SERVICES=off` skips all this (tests that need a service then
 *   fail with a message saying so).
 *
 * Teardown: services stay up after the run (a developer's next run starts in
 * under a second, and concurrent test runs in the same checkout keep theirs),
 * except when `CI` is set and this run started all of them itself: then it
 * stops them, so a one-shot CI host ends tidy. `.ci/run` starts them before
 * the tests and stops them at exit itself.
 */
import { type ServicesEnv, servicesDown, servicesUp } from '../../deploy/src/services/index.ts';

const VARIABLES = [
  'REDIS_URL',
  'DATABASE_URL',
  'KAFKA_BROKERS',
  'S3_ENDPOINT',
  'S3_ACCESS_KEY_ID',
  'S3_SECRET_ACCESS_KEY',
  'S3_REGION',
] as const satisfies readonly (keyof ServicesEnv)[];

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  const missing = VARIABLES.filter((name) => !process.env[name]);
  if (missing.length === 0) return undefined;
  if (process.env.POLYVISION_SERVICES === 'off') {
    process.stderr.write(`[services] POLYVISION_SERVICES=off: not starting services; ${missing.join(', ')} unset\n`);
    return undefined;
  }
  const onProgress = (line: string) => process.stderr.write(`[services] ${line}\n`);
  const result = await servicesUp({ onProgress });
  for (const name of missing) process.env[name] = result.env[name];
  const startedAll = Object.values(result.outcomes).every((outcome) => outcome === 'started');
  onProgress(
    `${missing.map((name) => `${name}=${name === 'S3_SECRET_ACCESS_KEY' ? '…' : result.env[name]}`).join(' ')} (${Object.entries(
      result.outcomes,
    )
      .map(([name, outcome]) => `${name} ${outcome}`)
      .join(', ')}, ${result.elapsedMs} ms)`,
  );
  return async () => {
    if (process.env.CI && startedAll) {
      onProgress('CI run started the services: stopping them');
      await servicesDown({ onProgress });
    }
  };
}
