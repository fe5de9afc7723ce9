import { findProcessesMentioning, stopProcess } from './daemon.ts';
import { kafkaService } from './kafka.ts';
import { withWorkDirLock } from './lock.ts';
import { compileServicesOptions, type ServicesOptions } from './options.ts';
import { postgresClusterRoot, postgresService } from './postgres.ts';
import { redisService } from './redis.ts';
import { type S3Env, s3Env, s3Service } from './s3.ts';
import type { DownOutcome, LocalService, ServiceName, ServiceStatus, UpOutcome } from './service.ts';

/** Every local service, in start order. */
export const localServices: readonly LocalService[] = [redisService, postgresService, kafkaService, s3Service];

/** How long `up`/`down` wait for another `up`/`down` on the same working folder. */
const LOCK_TIMEOUT_MS = 15 * 60_000;

/**
 * The environment the services answer at: `{ REDIS_URL, DATABASE_URL,
 * KAFKA_BROKERS, S3_ENDPOINT, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_REGION }`.
 */
export type ServicesEnv = Record<'REDIS_URL' | 'DATABASE_URL' | 'KAFKA_BROKERS', string> & S3Env;

export interface ServicesUpResult {
  /** What happened to each service. */
  outcomes: Record<ServiceName, UpOutcome>;
  env: ServicesEnv;
  /** Wall time of the whole `up`, in milliseconds. */
  elapsedMs: number;
}

function envOf(options: Readonly<ServicesOptions>): ServicesEnv {
  return {
    REDIS_URL: redisService.url(options),
    DATABASE_URL: postgresService.url(options),
    KAFKA_BROKERS: kafkaService.url(options),
    ...s3Env(options),
  };
}

/**
 * Installs what is missing (one service at a time: apt-get holds a global
 * lock), then starts Redis, PostgreSQL, Kafka and S3 (versitygw) in parallel. Idempotent:
 * running instances that answer are kept. The processes are daemons and
 * outlive the caller on purpose; `servicesDown` stops them.
 *
 * @throws PolyvisionError with codes `services_package_missing`,
 *   `services_command_failed`, `services_install_failed`, `services_port_in_use`,
 *   `services_start_failed`, `services_locked`, `config_invalid`.
 */
export async function servicesUp(options: Partial<ServicesOptions> = {}): Promise<ServicesUpResult> {
  const compiled = compileServicesOptions(options);
  const started = performance.now();
  return withWorkDirLock(compiled.workDir, LOCK_TIMEOUT_MS, compiled.onProgress, async () => {
    for (const service of localServices) await service.install(compiled);
    const results = await Promise.allSettled(localServices.map((service) => service.up(compiled)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const outcomes = Object.fromEntries(
      localServices.map((service, i) => [service.name, (results[i] as PromiseFulfilledResult<UpOutcome>).value]),
    ) as Record<ServiceName, UpOutcome>;
    return { outcomes, env: envOf(compiled), elapsedMs: Math.round(performance.now() - started) };
  });
}

/**
 * A real round trip with each service (Redis PING, PostgreSQL `SELECT 1`,
 * Kafka metadata request, S3 `GET /`), in parallel. Never throws for a service that is down.
 *
 * @param timeoutMs - bound for each round trip, in milliseconds.
 */
export async function servicesStatus(
  options: Partial<ServicesOptions> = {},
  timeoutMs = 5_000,
): Promise<ServiceStatus[]> {
  const compiled = compileServicesOptions(options);
  return Promise.all(localServices.map((service) => service.status(compiled, timeoutMs)));
}

export interface ServicesDownResult {
  /** What happened to each service asked for (all of them unless `only` named some). */
  outcomes: Partial<Record<ServiceName, DownOutcome>>;
  /** Pids of leftover processes (command line naming our working folder) that were killed. */
  leftoversKilled: number[];
}

/**
 * Stops our own instances (S3 first, then Kafka, then PostgreSQL with `pg_ctl stop -m
 * fast`, then Redis), then kills leftovers: processes whose command line names
 * our working folder (or the PostgreSQL cluster folder). External services on
 * our ports are left alone.
 *
 * @param only - stop just these services (e.g. the ones a test run started itself,
 *   `'started'` in `ServicesUpResult.outcomes`); the others are left alone, and leftovers
 *   are only swept when every service was asked for.
 */
export async function servicesDown(
  options: Partial<ServicesOptions> = {},
  only?: readonly ServiceName[],
): Promise<ServicesDownResult> {
  const compiled = compileServicesOptions(options);
  return withWorkDirLock(compiled.workDir, LOCK_TIMEOUT_MS, compiled.onProgress, async () => {
    const outcomes: Partial<Record<ServiceName, DownOutcome>> = {};
    for (const service of [...localServices].reverse()) {
      if (only && !only.includes(service.name)) continue;
      compiled.onProgress(`${service.name}: stopping`);
      outcomes[service.name] = await service.down(compiled);
    }
    if (only && localServices.some((service) => !only.includes(service.name))) return { outcomes, leftoversKilled: [] };
    const needles = [compiled.workDir, await postgresClusterRoot(compiled)];
    const leftovers = new Set<number>();
    for (const needle of needles) for (const pid of await findProcessesMentioning(needle)) leftovers.add(pid);
    for (const pid of leftovers) {
      compiled.onProgress(`killing leftover process ${pid}`);
      await stopProcess(pid, 5_000);
    }
    return { outcomes, leftoversKilled: [...leftovers] };
  });
}

/** `export NAME='value'` lines for a POSIX shell (`eval "$(pnpm -s polyvision services up)"`). */
export function exportLines(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([name, value]) => `export ${name}='${value.replaceAll("'", "'\\''")}'`)
    .join('\n');
}
