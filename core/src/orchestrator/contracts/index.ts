/** Contracts of the orchestrator: stage graph, topic names, command, task and event messages. */
export * from './commands.ts';
export * from './events.ts';
export * from './stages.ts';
export * from './tasks.ts';
export * from './topics.ts';
