import { Agent } from 'undici';

/** Options of {@link createHttpAgent}. All durations in ms. */
export interface HttpAgentOptions {
  /** Most sockets per origin. @defaultValue 32 */
  connections?: number;
  /** Requests pipelined per socket (1 = none; HTTP/1.1 pipelining is fragile). @defaultValue 1 */
  pipelining?: number;
  /** Idle time before a kept-alive socket is closed, when the server sends no hint. @defaultValue 4_000 */
  keepAliveTimeoutMs?: number;
  /** Upper bound on a server-suggested keep-alive time. @defaultValue 60_000 */
  keepAliveMaxTimeoutMs?: number;
  /** TCP (and TLS) connect timeout. @defaultValue 5_000 */
  connectTimeoutMs?: number;
}

/**
 * Builds an undici `Agent` (a pool per origin) with keep-alive and a bound
 * on connections, for service-to-service traffic. Close it with
 * `await agent.close()` when the owner stops.
 */
export function createHttpAgent(options: HttpAgentOptions = {}): Agent {
  return new Agent({
    connections: options.connections ?? 32,
    pipelining: options.pipelining ?? 1,
    keepAliveTimeout: options.keepAliveTimeoutMs ?? 4_000,
    keepAliveMaxTimeout: options.keepAliveMaxTimeoutMs ?? 60_000,
    connect: { timeout: options.connectTimeoutMs ?? 5_000 },
  });
}
