import { readFile } from 'node:fs/promises';
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
  url: string | null;
  /** HTTP status of `/health/ready`, the worker's state, or why the probe failed. */
  detail: string;
  logFile: string;
}

/**
 * Probes one cluster process: is its pid alive, and is it ready
 * (`GET <url>/health/ready` → 2xx within `timeoutMs`; a worker, which has no
 * HTTP server, when its log holds the `{"event":"started"}` line the worker
 * CLI prints once it has joined its groups). Never throws.
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
  if (!(await isAlive(record.pid))) return { ...base, alive: false, ready: false, detail: 'not running' };
  if (record.url === null) {
    const log = await readFile(record.logFile, 'utf8').catch(() => '');
    const started = log.includes('"event":"started"');
    return { ...base, alive: true, ready: started, detail: started ? 'started' : 'starting' };
  }
  try {
    const response = await fetch(`${record.url}/health/ready`, {
      headers: record.healthToken ? { authorization: `Bearer ${record.healthToken}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel();
    return { ...base, alive: true, ready: response.ok, detail: `HTTP ${response.status}` };
  } catch (error) {
    return { ...base, alive: true, ready: false, detail: (error as Error).message };
  }
}
