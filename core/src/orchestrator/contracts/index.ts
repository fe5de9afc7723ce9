/**
 * Orchestrator-side contracts on top of `@polyvision/shared/contracts`
 * (messages, tasks, events, DLQ records live there): the stage dependency
 * graph and topic/group names under a configurable prefix (test isolation).
 */
export * from './stages.ts';
export * from './topics.ts';
