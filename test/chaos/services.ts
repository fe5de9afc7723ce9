import type { ClusterServicesEnv } from '../../deploy/src/cluster/index.ts';
import {
  compileServicesOptions,
  kafkaService,
  type LocalService,
  postgresService,
  redisService,
  type ServicesOptions,
} from '../../deploy/src/services/index.ts';

/** The services a chaos run owns (and may restart): no S3, the cluster's SEs store locally. */
export type ChaosServiceName = 'redis' | 'postgres' | 'kafka';

const SERVICES: Record<ChaosServiceName, LocalService> = {
  redis: redisService,
  postgres: postgresService,
  kafka: kafkaService,
};

/** What one restart took, in milliseconds. */
export interface ServiceRestart {
  name: ChaosServiceName;
  /** From the stop request until the process was gone. */
  downMs: number;
  /** From the start until the service answered a round trip again. */
  upMs: number;
}

/**
 * Private Redis, PostgreSQL and Kafka for a chaos run, started with the
 * project's own service scripts (deploy/src/services) in their own folder and
 * on their own ports, so restarting them disturbs nobody else's tests.
 * Redis keeps no data across a restart (its template has no persistence: a
 * restart loses every key); PostgreSQL and Kafka keep theirs.
 */
export class ChaosServices {
  readonly options: Readonly<ServicesOptions>;

  /**
   * @param workDir - data, logs and pid files; never the developer's own services folder
   *   (`POLYVISION_SERVICES_DIR`), whose daemons on other ports `up` would restart.
   *   @defaultValue `CHAOS_SERVICES_DIR` or `/tmp/chaos-svc`
   * @param basePort - Redis on `basePort`, PostgreSQL `+1`, Kafka `+2`, its controller `+3`;
   *   above the ephemeral range (32768–60999) is fine for listeners that live as long as the run.
   *   @defaultValue `CHAOS_SERVICES_PORT` or 65300
   */
  constructor({ workDir, basePort }: { workDir?: string; basePort?: number } = {}) {
    basePort ??= Number(process.env.CHAOS_SERVICES_PORT || 65_300);
    if (!Number.isInteger(basePort) || basePort < 1024 || basePort > 65_530) {
      throw new Error(`CHAOS_SERVICES_PORT must be an integer from 1024 to 65530, not ${basePort}`);
    }
    this.options = compileServicesOptions({
      workDir: workDir ?? process.env.CHAOS_SERVICES_DIR ?? '/tmp/chaos-svc',
      redisPort: basePort,
      postgresPort: basePort + 1,
      kafkaPort: basePort + 2,
      kafkaControllerPort: basePort + 3,
      s3Port: basePort + 4,
      onProgress: (line) => process.stderr.write(`[chaos-services] ${line}\n`),
    });
  }

  /** REDIS_URL, DATABASE_URL, KAFKA_BROKERS of these services. */
  get env(): ClusterServicesEnv {
    return {
      REDIS_URL: redisService.url(this.options),
      DATABASE_URL: postgresService.url(this.options),
      KAFKA_BROKERS: kafkaService.url(this.options),
    };
  }

  /** Installs what is missing and starts the three (idempotent: running ones are kept). */
  async up(): Promise<ClusterServicesEnv> {
    for (const service of Object.values(SERVICES)) await service.install(this.options);
    await Promise.all(Object.values(SERVICES).map((service) => service.up(this.options)));
    return this.env;
  }

  /**
   * Stops one service cleanly (Redis and Kafka SIGTERM, PostgreSQL `pg_ctl
   * stop -m fast`: open connections are cut) and starts it again; returns
   * once it answers a round trip.
   */
  async restart(name: ChaosServiceName): Promise<ServiceRestart> {
    const service = SERVICES[name];
    const stopAt = performance.now();
    await service.down(this.options);
    const startAt = performance.now();
    await service.up(this.options);
    return {
      name,
      downMs: Math.round(startAt - stopAt),
      upMs: Math.round(performance.now() - startAt),
    };
  }

  /** Stops the three (data stays in the working folder). */
  async down(): Promise<void> {
    for (const name of ['kafka', 'postgres', 'redis'] as const) await SERVICES[name].down(this.options);
  }
}
