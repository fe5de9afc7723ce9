import { open } from 'node:fs/promises';
import { isAlive } from '../services/daemon.ts';
import type { ClusterProcessRecord } from './state.ts';

/** What `cluster status` finds for one process. */
export interface ClusterProcessStatus {
  name: string;
  role: ClusterProcessRecord['role'];
  pid: number;
  alive: boolean;
  /** Ready: `/health/ready` answered 2xx (HTTP processes) or the worker printed its `started` line and is alive. */
  ready: boolean;
  /**
   * The CLI printed its fatal-error line (`polyvision: [code] …`) since this
   * start: the process is done for, even if it has not exited (a service
   * that failed at start with connections still open).
   */
  failed: boolean;
  url: string | null;
  /** HTTP status of `/health/ready`, the worker's state, or why the probe failed. */
  detail: string;
  logFile: string;
}

/**
 * Probes one cluster process: is its pid alive, and is it ready
 * (`GET <url>/health/ready` → 2xx within `timeoutMs`; a worker, which has no
 * HTTP server, when its log, since this start, holds the `{"event":"started"}`
 * line the worker CLI prints once it has joined its groups). Never throws.
 *
 * @param timeoutMs - bound of the HTTP probe, in milliseconds.
 */
export async function probeProcess(record: ClusterProcessRecord, timeoutMs: number): Promise<ClusterProcessStatus> {
  const base = {
    name: record.name,
    role: record.role,
    pid: record.pid,
    url: record.url,
    logFile: record.logFile,
  };
  const log = await readFrom(record.logFile, record.logStartBytes ?? 0);
  const fatal = /^polyvision: \[[a-z_]+\].*$/m.exec(log)?.[0];
  if (!(await isAlive(record.pid))) {
    return { ...base, alive: false, ready: false, failed: true, detail: fatal ?? 'not running' };
  }
  if (fatal) return { ...base, alive: true, ready: false, failed: true, detail: fatal };
  if (record.url === null) {
    const started = log.includes('"event":"started"');
    return { ...base, alive: true, ready: started, failed: false, detail: started ? 'started' : 'starting' };
  }
  try {
    const response = await fetch(`${record.url}/health/ready`, {
      headers: record.healthToken ? { authorization: `Bearer ${record.healthToken}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel();
    return { ...base, alive: true, ready: response.ok, failed: false, detail: `HTTP ${response.status}` };
  } catch (error) {
    return { ...base, alive: true, ready: false, failed: false, detail: (error as Error).message };
  }
}

/** The text of a file from `offsetBytes` on (at most 4 MiB), or '' when it cannot be read. */
async function readFrom(file: string, offsetBytes: number): Promise<string> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(file, 'r');
    const buffer = Buffer.alloc(4 * 1024 * 1024);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, offsetBytes);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } catch {
    return '';
  } finally {
    await handle?.close();
  }
}
