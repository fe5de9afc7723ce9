/** The variables the global setup exports to every test file. */
export type ServiceVariable = 'REDIS_URL' | 'DATABASE_URL' | 'KAFKA_BROKERS';

/**
 * The value of REDIS_URL, DATABASE_URL or KAFKA_BROKERS.
 *
 * @throws Error saying how to get it when unset (the global setup
 *   test/support/global-setup.ts sets all three unless it was bypassed).
 */
export function serviceUrl(variable: ServiceVariable): string {
  const value = process.env[variable];
  if (!value) {
    throw new Error(
      `${variable} is not set: run tests through vitest with test/support/global-setup.ts, or eval "$(pnpm -s polyvision services up)"`,
    );
  }
  return value;
}
