/**
 * `pnpm demo` — the main job end to end in one process (issue 9):
 * - {@link runDemo} (run-demo.ts): sample → SEs, ingest ×2, orchestrators ×2,
 *   worker → edge stitch + upload (a 507 met on the nearly full SE) → stages → out/<match_id>/;
 * - {@link openDemoInfra} (infra.ts): real Redis/PostgreSQL/Kafka from their URLs, else embedded;
 * - {@link startDemoStorage} (storage.ts), {@link startDemoStack} (stack.ts): the core site;
 * - {@link stitchPanorama}, {@link uploadPanorama} (edge.ts): the edge's part;
 * - {@link ensureSample} (sample.ts): the cached synthetic match;
 * - {@link LiveView} (live-view.ts), {@link formatSummary} (summary.ts), {@link writeReport} (report.ts).
 */
export * from './collect.ts';
export * from './detect-hint.ts';
export * from './edge.ts';
export * from './embedded-redis.ts';
export * from './infra.ts';
export * from './live-view.ts';
export * from './options.ts';
export * from './report.ts';
export * from './run-demo.ts';
export * from './sample.ts';
export * from './stack.ts';
export * from './storage.ts';
export * from './summary.ts';
