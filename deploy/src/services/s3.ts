import { access, constants, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PolyvisionError } from '@polyvision/shared';
import { isAlive, readPidFile, spawnDaemon } from './daemon.ts';
import { commandExists, exec } from './exec.ts';
import { type ManagedSpec, stopManaged, upManaged } from './managed.ts';
import type { ServicesOptions } from './options.ts';
import { type RoundTrip, timeRoundTrip } from './round-trip.ts';
import type { LocalService } from './service.ts';

/**
 * A real S3-compatible server on loopback for the storage element's S3
 * backend: Versity S3 Gateway (versitygw, Apache-2.0, Go) with its `posix`
 * backend, objects as plain files under `<workDir>/s3/data`, object metadata
 * in a sidecar folder (works on filesystems without user xattrs).
 *
 * Why versitygw: it is a production S3 gateway (multipart, ranges, user
 * metadata, SigV4) that builds with one `go install` from the Go module proxy
 * in about 1m45s on a 2-core host (measured 2026-11-20), against several
 * minutes and far more memory for MinIO or SeaweedFS; it keeps data on disk,
 * so multi-GiB objects do not sit in RAM (unlike moto's server mode).
 */
export const VERSITYGW_MODULE = 'github.com/versity/versitygw/cmd/versitygw';
/** Pinned release. */
export const VERSITYGW_VERSION = 'v1.8.0';
/** Root credentials of the local gateway (loopback only, test data only). */
export const S3_ACCESS_KEY_ID = 'polyvision';
export const S3_SECRET_ACCESS_KEY = 'polyvision-local-secret';
/** Default loopback port (override with `POLYVISION_S3_PORT`). */
export const DEFAULT_S3_PORT = 59000;

/** The options the S3 service reads: the shared services options plus its port. */
export type S3ServiceOptions = Pick<ServicesOptions, 'workDir' | 'cacheDir' | 'onProgress'> & {
  /** Loopback port. @defaultValue `POLYVISION_S3_PORT` or 59000 */
  s3Port?: number;
};

/** The environment a client of the local S3 needs. */
export type S3Env = Record<'S3_ENDPOINT' | 'S3_ACCESS_KEY_ID' | 'S3_SECRET_ACCESS_KEY' | 'S3_REGION', string>;

function portOf(options: S3ServiceOptions): number {
  if (options.s3Port !== undefined) return options.s3Port;
  const fromEnv = Number(process.env.POLYVISION_S3_PORT ?? DEFAULT_S3_PORT);
  return Number.isInteger(fromEnv) && fromEnv > 0 && fromEnv < 65536 ? fromEnv : DEFAULT_S3_PORT;
}

/** `http://127.0.0.1:<port>` */
export function s3Url(options: S3ServiceOptions): string {
  return `http://127.0.0.1:${portOf(options)}`;
}

/** Endpoint and credentials of the local S3, as environment variables. */
export function s3Env(options: S3ServiceOptions): S3Env {
  return {
    S3_ENDPOINT: s3Url(options),
    S3_ACCESS_KEY_ID,
    S3_SECRET_ACCESS_KEY,
    S3_REGION: 'us-east-1',
  };
}

/** Where `go install` puts the binary: `<cacheDir>/bin/versitygw`. */
export function versitygwPath(options: Pick<S3ServiceOptions, 'cacheDir'>): string {
  return path.join(options.cacheDir, 'bin', 'versitygw');
}

/**
 * One unauthenticated `GET /`: an S3 server answers with an S3 XML body
 * (an `AccessDenied` error or a bucket list). Anything else is not S3.
 */
export function pingS3(url: string, timeoutMs: number): Promise<RoundTrip> {
  return timeRoundTrip(async () => {
    const response = await fetch(`${url}/`, { signal: AbortSignal.timeout(timeoutMs) });
    const body = await response.text();
    if (!body.includes('<?xml') && !body.includes('<Error>') && !body.includes('ListAllMyBuckets')) {
      throw new Error(`not an S3 answer (HTTP ${response.status})`);
    }
    return `S3 answered HTTP ${response.status}`;
  }, timeoutMs);
}

function spec(options: S3ServiceOptions): ManagedSpec {
  const dir = path.join(options.workDir, 's3');
  const logFile = path.join(dir, 'versitygw.log');
  const pidFile = path.join(dir, 'versitygw.pid');
  const port = portOf(options);
  return {
    label: 'S3 (versitygw)',
    pidFile,
    logFile,
    port,
    portVariable: 'POLYVISION_S3_PORT',
    ping: (timeoutMs) => pingS3(s3Url(options), timeoutMs),
    start: async () => {
      const data = path.join(dir, 'data');
      const meta = path.join(dir, 'meta');
      await mkdir(data, { recursive: true });
      await mkdir(meta, { recursive: true });
      return spawnDaemon({
        command: versitygwPath(options),
        args: ['--port', `127.0.0.1:${port}`, 'posix', '--sidecar', meta, data],
        cwd: dir,
        logFile,
        pidFile,
        env: { ...process.env, ROOT_ACCESS_KEY: S3_ACCESS_KEY_ID, ROOT_SECRET_KEY: S3_SECRET_ACCESS_KEY },
      });
    },
    readyTimeoutMs: 20_000,
    stopGraceMs: 5_000,
    onProgress: options.onProgress,
  };
}

/**
 * The local S3 service (versitygw), started by `services up` after Redis,
 * PostgreSQL and Kafka; `services down` stops it.
 */
export const s3Service: LocalService = {
  name: 's3',
  envVar: 'S3_ENDPOINT',
  url: s3Url,

  /**
   * Builds versitygw with `go install` into `<cacheDir>/bin` unless it is there.
   *
   * @throws PolyvisionError `services_package_missing` without Go, `services_command_failed` when the build fails.
   */
  async install(options) {
    const binary = versitygwPath(options);
    try {
      await access(binary, constants.X_OK);
      return;
    } catch {
      // not built yet
    }
    if (!(await commandExists('go'))) {
      throw new PolyvisionError(
        'services_package_missing',
        'the S3 server (versitygw) is built with Go; install Go (https://go.dev/dl) or put it on PATH',
      );
    }
    options.onProgress(`S3: building versitygw ${VERSITYGW_VERSION} with go install (about 2 minutes the first time)`);
    const started = performance.now();
    await exec('go', ['install', `${VERSITYGW_MODULE}@${VERSITYGW_VERSION}`], {
      env: { ...process.env, GOBIN: path.dirname(binary), GOFLAGS: '-buildvcs=false' },
      timeoutMs: 15 * 60_000,
    });
    options.onProgress(`S3: versitygw built in ${Math.round((performance.now() - started) / 1000)} s`);
  },

  /** Starts versitygw unless an S3 server already answers on the port. */
  up: (options) => upManaged(spec(options)),

  /** A real round trip with the server (`GET /`). */
  async status(options, timeoutMs) {
    const pid = await readPidFile(path.join(options.workDir, 's3', 'versitygw.pid'));
    const trip = await pingS3(s3Url(options), timeoutMs);
    return {
      name: 's3',
      envVar: 'S3_ENDPOINT',
      url: s3Url(options),
      pid: pid && (await isAlive(pid)) ? pid : null,
      ...trip,
    };
  },

  /** Stops our own instance; leaves an external one alone. */
  down: (options) => stopManaged(spec(options)),
};
