/**
 * Real Redis, PostgreSQL, Apache Kafka and an S3 server (versitygw) on
 * loopback, without Docker, for tests and local runs:
 * `pnpm polyvision services up|down|status`.
 *
 * - `servicesUp()` installs what is missing (apt-get, Kafka jars from Maven
 *   Central, versitygw with `go install`) and starts the four as daemons on
 *   private ports (56379, 55432, 59092/59093, 59000), data in
 *   `.work/services/`; idempotent.
 * - `servicesStatus()` does a real round trip with each.
 * - `servicesDown()` stops them and kills leftovers.
 * - `compileServicesOptions()` reads the POLYVISION_* overrides.
 *
 * One file per service (redis.ts, postgres.ts, kafka.ts, s3.ts); lifecycle.ts
 * orchestrates them; managed.ts is the pid-file + round-trip idempotence they share.
 */
export { kafkaService, kafkaVersion, pingKafka } from './kafka.ts';
export {
  exportLines,
  localServices,
  type ServicesDownResult,
  type ServicesEnv,
  type ServicesUpResult,
  servicesDown,
  servicesStatus,
  servicesUp,
} from './lifecycle.ts';
export { compileServicesOptions, type ServicesOptions } from './options.ts';
export { DATABASE_NAME, pingPostgres, postgresService } from './postgres.ts';
export { pingRedis, redisService } from './redis.ts';
export type { RoundTrip } from './round-trip.ts';
export { pingS3, type S3Env, s3Env, s3Service } from './s3.ts';
export type { DownOutcome, LocalService, ServiceName, ServiceStatus, UpOutcome } from './service.ts';
