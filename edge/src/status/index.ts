/** The local status API: `statusApp` (hono: status, health, metrics, behind the status token), `loadStatusToken`, and the `EdgeStatus` body. */
export * from './edge-status.ts';
export * from './status-app.ts';
export * from './status-token.ts';
