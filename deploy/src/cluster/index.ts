/**
 * A local multi-process cluster: the Docker compose topology (3 storage
 * elements in 3 datacenters, 2 ingest, 2 orchestrators, 1 worker) as separate
 * processes on 127.0.0.1, against the real services of
 * `pnpm polyvision services up`: `pnpm polyvision cluster up|down|status`.
 *
 * - options.ts: `compileClusterOptions()` (POLYVISION_CLUSTER_* overrides);
 * - topology.ts: `planCluster()`, the processes, their ports and variables;
 * - lifecycle.ts: `clusterUp()`, `clusterStatus()`, `clusterDown()`; one process's
 *   `startClusterProcess()` / `waitClusterReady()` (the chaos harness restarts processes with them);
 * - health.ts: `probeProcess()` (pid + `/health/ready`);
 * - state.ts: `cluster.json` (pids, URLs, tokens);
 * - leftovers.ts: processes whose working directory is in the cluster folder.
 */
export type { ClusterProcessStatus } from './health.ts';
export { probeProcess } from './health.ts';
export { findProcessesInFolder } from './leftovers.ts';
export {
  type ClusterDownResult,
  type ClusterUpResult,
  clusterDown,
  clusterStatus,
  clusterUp,
  startProcess as startClusterProcess,
  waitReady as waitClusterReady,
} from './lifecycle.ts';
export { type ClusterOptions, compileClusterOptions } from './options.ts';
export { type ClusterProcessRecord, type ClusterState, readClusterState, stateFile } from './state.ts';
export {
  CLI_MAIN,
  type ClusterProcessPlan,
  type ClusterRole,
  type ClusterServicesEnv,
  planCluster,
} from './topology.ts';
