import path from 'node:path';
import { envInt, loadConfig } from '@polyvision/shared';
import { z } from 'zod';
import { repoRoot } from './paths.ts';

/**
 * Where and on which loopback ports the local real services run.
 *
 * The ports are private on purpose: they never collide with a system Redis
 * (6379), PostgreSQL (5432) or Kafka (9092) that may also run on the host.
 */
export interface ServicesOptions {
  /** Working folder for data, logs and pid files. @defaultValue `<repo>/.work/services` */
  workDir: string;
  /** Cache for downloaded Kafka jars and the Maven repository. @defaultValue `$HOME/.cache/polyvision` */
  cacheDir: string;
  /** Redis port on 127.0.0.1. @defaultValue 56379 */
  redisPort: number;
  /** PostgreSQL port on 127.0.0.1. @defaultValue 55432 */
  postgresPort: number;
  /** Kafka client (PLAINTEXT) port on 127.0.0.1. @defaultValue 59092 */
  kafkaPort: number;
  /** Kafka KRaft controller port on 127.0.0.1. @defaultValue 59093 */
  kafkaControllerPort: number;
  /** S3 (versitygw) port on 127.0.0.1. @defaultValue 59000 */
  s3Port: number;
  /** Receives one human-readable line per step (installing, starting, ready). @defaultValue no-op */
  onProgress: (line: string) => void;
}

/** The environment variables that override the defaults; documented in deploy/README.md. */
const envSchema = z.object({
  POLYVISION_SERVICES_DIR: z.string().optional(),
  POLYVISION_CACHE_DIR: z.string().optional(),
  POLYVISION_REDIS_PORT: envInt(56379, 1, 65535),
  POLYVISION_POSTGRES_PORT: envInt(55432, 1, 65535),
  POLYVISION_KAFKA_PORT: envInt(59092, 1, 65535),
  POLYVISION_KAFKA_CONTROLLER_PORT: envInt(59093, 1, 65535),
  POLYVISION_S3_PORT: envInt(59000, 1, 65535),
});

/**
 * Fills every option: explicit values first, then the environment
 * (`POLYVISION_SERVICES_DIR`, `POLYVISION_CACHE_DIR`, `POLYVISION_REDIS_PORT`,
 * `POLYVISION_POSTGRES_PORT`, `POLYVISION_KAFKA_PORT`,
 * `POLYVISION_KAFKA_CONTROLLER_PORT`, `POLYVISION_S3_PORT`), then the defaults.
 *
 * @throws ConfigError (code `config_invalid`) naming a bad variable.
 */
export function compileServicesOptions(
  options: Partial<ServicesOptions> = {},
  env: Record<string, string | undefined> = process.env,
): Readonly<ServicesOptions> {
  const config = loadConfig(envSchema, env);
  const home = env.HOME ?? '/root';
  return Object.freeze({
    workDir: path.resolve(
      options.workDir ?? config.POLYVISION_SERVICES_DIR ?? path.join(repoRoot, '.work', 'services'),
    ),
    cacheDir: path.resolve(options.cacheDir ?? config.POLYVISION_CACHE_DIR ?? path.join(home, '.cache', 'polyvision')),
    redisPort: options.redisPort ?? config.POLYVISION_REDIS_PORT,
    postgresPort: options.postgresPort ?? config.POLYVISION_POSTGRES_PORT,
    kafkaPort: options.kafkaPort ?? config.POLYVISION_KAFKA_PORT,
    kafkaControllerPort: options.kafkaControllerPort ?? config.POLYVISION_KAFKA_CONTROLLER_PORT,
    s3Port: options.s3Port ?? config.POLYVISION_S3_PORT,
    onProgress: options.onProgress ?? (() => {}),
  });
}
