/** Composition of an orchestrator process: config from the environment, connections, HTTP. */
export * from './connections.ts';
export * from './orchestrator-config.ts';
export * from './orchestrator-service.ts';
