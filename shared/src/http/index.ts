/**
 * HTTP on both sides.
 * - Client (undici): `httpJson`/`httpJsonResponse` (timeouts, JSON + zod
 *   validation, body cap, same-origin redirects only, failures mapped to
 *   retriable or final PolyvisionErrors), `createHttpAgent` (keep-alive pool).
 * - Server (hono): `errorHandler`, `notFoundHandler`, `bearerAuth`,
 *   `rejectControlCharacters`, `healthRoutes`, and `serve` (node server with port 0 support and a clean close).
 */
export * from './agent.ts';
export * from './bearer-auth.ts';
export * from './client-errors.ts';
export * from './error-handler.ts';
export * from './health-routes.ts';
export * from './http-json.ts';
export * from './reject-control-characters.ts';
export * from './serve.ts';
