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
 * Teardown: the services this run started are stopped at the end (a fresh
 * host ends tidy); services that already ran before it (a developer's
 * `polyvision services up`, another run's, the ones in the environment
 * variables) are left running. `POLYVISION_KEEP_SERVICES=1` keeps the ones it
 * started too, so the next run starts in under a second.
 */
import { type ServicesEnv, servicesDown, servicesUp } from '../../deploy/src/services/index.ts';
import type { ServiceName, UpOutcome } from '../../deploy/src/services/service.ts';

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
  const startedHere = (Object.entries(result.outcomes) as [ServiceName, UpOutcome][])
    .filter(([, outcome]) => outcome === 'started')
    .map(([name]) => name);
  onProgress(
    `${missing.map((name) => `${name}=${name === 'S3_SECRET_ACCESS_KEY' ? '…' : result.env[name]}`).join(' ')} (${Object.entries(
      result.outcomes,
    )
      .map(([name, outcome]) => `${name} ${outcome}`)
      .join(', ')}, ${result.elapsedMs} ms)`,
  );
  return async () => {
    if (startedHere.length === 0) return;
    if (process.env.POLYVISION_KEEP_SERVICES === '1') {
      onProgress(`POLYVISION_KEEP_SERVICES=1: leaving ${startedHere.join(', ')} running`);
      return;
    }
    onProgress(`stopping what this run started: ${startedHere.join(', ')}`);
    await servicesDown({ onProgress }, startedHere);
  };
}
