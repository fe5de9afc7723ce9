/** The SE's HTTP layer: the hono app, its routes and metrics. Handlers are thin; services do the work. */
export * from './app.ts';
export * from './context.ts';
export * from './metrics.ts';
