import type { ServicesOptions } from './options.ts';

/** The names of the local services, in start order. */
export type ServiceName = 'redis' | 'postgres' | 'kafka' | 's3';

/** What `status` finds for one service. */
export interface ServiceStatus {
  name: ServiceName;
  /** The environment variable tests and services read: REDIS_URL, DATABASE_URL, KAFKA_BROKERS, S3_ENDPOINT. */
  envVar: string;
  /** The value of that variable for this service. */
  url: string;
  /** Whether a real round trip succeeded (Redis PING, PostgreSQL SELECT 1, Kafka metadata request, S3 `GET /`). */
  answering: boolean;
  /** The pid recorded in our working folder when that process is alive, else null. */
  pid: number | null;
  /** Duration of the round trip in milliseconds (also when it failed). */
  roundTripMs: number;
  /** The reply (e.g. `PONG`) or why the round trip failed. */
  detail: string;
}

/** What `up` did for one service. */
export type UpOutcome =
  /** It was not running; we started it. */
  | 'started'
  /** Our own instance (pid file in the working folder) was already running and answering. */
  | 'running'
  /** Something else answers on the port (another checkout's services, a developer's broker); we use it. */
  | 'external';

/** What `down` did for one service. */
export type DownOutcome = 'stopped' | 'killed' | 'not_running' | 'external';

/** One local service: how to install, start, check and stop it. */
export interface LocalService {
  readonly name: ServiceName;
  readonly envVar: string;
  url(options: Readonly<ServicesOptions>): string;
  /** Installs what is missing (Debian packages, jars). Called one service at a time. */
  install(options: Readonly<ServicesOptions>): Promise<void>;
  /** Starts the service unless an instance already answers. */
  up(options: Readonly<ServicesOptions>): Promise<UpOutcome>;
  /** A real round trip, bounded by `timeoutMs`. Never throws. */
  status(options: Readonly<ServicesOptions>, timeoutMs: number): Promise<ServiceStatus>;
  /** Stops our own instance; leaves an external one alone. */
  down(options: Readonly<ServicesOptions>): Promise<DownOutcome>;
}
