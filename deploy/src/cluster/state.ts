import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PolyvisionError } from '@polyvision/shared';
import type { ClusterRole, ClusterServicesEnv } from './topology.ts';

/** One started process as recorded in `cluster.json`. */
export interface ClusterProcessRecord {
  name: string;
  role: ClusterRole;
  pid: number;
  port: number | null;
  url: string | null;
  /** Bearer token its `/health/ready` needs, or null. */
  healthToken: string | null;
  /** stdout and stderr of the process (appended across starts). */
  logFile: string;
  /** Size of `logFile` when this start began: readiness is read from what follows. */
  logStartBytes: number;
}

/** What `cluster up` leaves in `<workDir>/cluster.json` for `status` and `down`. */
export interface ClusterState {
  version: 1;
  /** ISO 8601. */
  startedAt: string;
  services: ClusterServicesEnv;
  topicPrefix: string;
  databaseSchema: string;
  redisKeyPrefix: string;
  organizationId: string;
  /** An edge bearer token of `organizationId` (created by `up`; for an edge node or a tus client). */
  edgeToken: string;
  /** The match the edge node records, or null without an edge. */
  edgeMatchId: string | null;
  /** Bearer token of the storage elements. */
  storageToken: string;
  /** Operator token: `OPS_TOKENS` of ingest and orchestrators (jobs of every organization, `/ops`, `/metrics`) and the edge's status token. */
  operatorToken: string;
  testStages: boolean;
  processes: ClusterProcessRecord[];
}

/** `<workDir>/cluster.json` */
export function stateFile(workDir: string): string {
  return path.join(workDir, 'cluster.json');
}

/**
 * Reads `cluster.json`.
 *
 * @returns the state, or null when there is none.
 * @throws PolyvisionError `cluster_state_invalid` when the file exists but is not a cluster state.
 */
export async function readClusterState(workDir: string): Promise<ClusterState | null> {
  let text: string;
  try {
    text = await readFile(stateFile(workDir), 'utf8');
  } catch {
    return null;
  }
  try {
    const state = JSON.parse(text) as ClusterState;
    if (state.version !== 1 || !Array.isArray(state.processes)) throw new Error('not version 1');
    return state;
  } catch (error) {
    throw new PolyvisionError(
      'cluster_state_invalid',
      `${stateFile(workDir)} is not a cluster state (${(error as Error).message}); run cluster down, then remove it`,
      { cause: error },
    );
  }
}

/** Writes `cluster.json` atomically (temp file + rename), so a reader never sees half of it. */
export async function writeClusterState(workDir: string, state: ClusterState): Promise<void> {
  const temp = `${stateFile(workDir)}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, stateFile(workDir));
}

/** Removes `cluster.json`; missing is fine. */
export async function removeClusterState(workDir: string): Promise<void> {
  await rm(stateFile(workDir), { force: true });
}
