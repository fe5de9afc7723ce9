/**
 * Chaos harness (issues 19 and 20): faults done to a cluster of real
 * processes running real jobs, and what they did, counted from the database.
 *
 * - services.ts: `ChaosServices`, private Redis, PostgreSQL and Kafka started
 *   with the project's own service scripts (`CHAOS_SERVICES_DIR`, default `/tmp/chaos-svc`;
 *   ports from `CHAOS_SERVICES_PORT`, default 65300–65303), with `restart(name)`; two runs
 *   at once need different values of both;
 * - cluster.ts: `ChaosCluster` (3 SEs, 3 orchestrators, 2 ingest, 2 workers on
 *   the real stages, from deploy/src/cluster) with `kill` (-9), `pause`
 *   (SIGSTOP), `resume`, `restart` (same id, port and folder); `freeBasePort()`;
 *   `FAST_LIVENESS_ENV` (6 s leases and sessions);
 * - match.ts: a synthetic match rendered once and submitted through tus;
 * - probes.ts: waits on the orchestrator's tables (a running stage, a finished job);
 * - census.ts: `takeCensus()` — jobs failed or unfinished, files missing or
 *   with the wrong SHA-256 on their SE, stages completed twice, re-runs and
 *   whether each is a new attempt, submit→ready.
 *
 * Used by fault-suite.test.ts (one fault per row, in the test command) and
 * bench/chaos/soak.ts (a backlog drained under random kills).
 * `CHAOS_KEEP_DIR=1` keeps the cluster's logs for a post-mortem.
 */
export { type Census, censusPool, percentile, type StageRerun, takeCensus } from './census.ts';
export {
  ChaosCluster,
  type ChaosClusterOptions,
  FAST_LIVENESS_ENV,
  freeBasePort,
  type ProcessFault,
} from './cluster.ts';
export { renderSyntheticPanorama, type SyntheticPanorama, submitMatch } from './match.ts';
export { created, finished, inputStorage, partitionOwner, runningStage, type StageRow } from './probes.ts';
export { type ChaosServiceName, ChaosServices, type ServiceRestart } from './services.ts';
