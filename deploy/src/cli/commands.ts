/**
 * The command table of the `polyvision` CLI. A command module exports
 * `run(argv: string[]): Promise<number>` (the exit status) and prints its own
 * `--help`. Add a row here to add a command.
 */
export interface CommandModule {
  run(argv: string[]): Promise<number>;
}

export interface Command {
  name: string;
  summary: string;
  load(): Promise<CommandModule>;
}

export const commands: Command[] = [
  {
    name: 'edge',
    summary: 'run an edge capture node: record, stitch, spool and upload (--config edge.json)',
    load: () => import('./commands/edge.ts'),
  },
  {
    name: 'cluster',
    summary: 'up|down|status: 3 SEs, 2 ingest, 2 orchestrators, 1 worker as local processes on the real services',
    load: () => import('./commands/cluster.ts'),
  },
  {
    name: 'services',
    summary: 'up|down|status: real Redis, PostgreSQL and Kafka on loopback for tests and local runs',
    load: () => import('./commands/services.ts'),
  },
  {
    name: 'synth-match',
    summary: 'render a synthetic multi-camera football clip with ground truth and venue.json',
    load: () => import('./commands/synth-match.ts'),
  },
  {
    name: 'storage-element',
    summary:
      'run a storage element (capacity, reservations, resumable uploads; local or S3); env in storage-element/README.md',
    load: () => import('./commands/storage-element.ts'),
  },
  {
    name: 'orchestrator',
    summary: 'run an orchestrator replica (group polyvision-orchestrator; env in core/README.md)',
    load: () => import('./commands/orchestrator.ts'),
  },
  {
    name: 'worker',
    summary: 'run analysis stages: --stages detect,track,… (env in core/README.md)',
    load: () => import('./commands/worker.ts'),
  },
  {
    name: 'jobs',
    summary: 'list|show ID|reprocess ID --from STAGE --model-version V|cancel ID',
    load: () => import('./commands/jobs.ts'),
  },
  {
    name: 'eval',
    summary: 'detections|tracks --gt G --pred P: precision/recall/AP50 per class, or HOTA/IDF1/MOTA',
    load: () => import('./commands/eval.ts'),
  },
  {
    name: 'demo',
    summary: 'the main job end to end in one process: edge → ingest → SEs → orchestrators → workers → out/<match_id>/',
    load: () => import('./commands/demo.ts'),
  },
  {
    name: 'ingest',
    summary: 'run an ingest replica (tus uploads → storage elements, capacity monitor); token create|list|revoke',
    load: () => import('./commands/ingest.ts'),
  },
];
