/** The local status API: `statusApp` (hono: status, health, metrics) and the `EdgeStatus` body. */
export * from './edge-status.ts';
export * from './status-app.ts';
