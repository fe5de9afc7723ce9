import net from 'node:net';

/** An open TCP connection of this process. */
export interface OpenSocket {
  remoteAddress: string | undefined;
  remotePort: number | undefined;
  localPort: number | undefined;
}

/** The ports of REDIS_URL, DATABASE_URL and KAFKA_BROKERS (those that are set). */
export function servicePorts(env: NodeJS.ProcessEnv = process.env): number[] {
  const ports: number[] = [];
  for (const url of [env.REDIS_URL, env.DATABASE_URL]) {
    if (!url) continue;
    try {
      const parsed = new URL(url);
      ports.push(Number(parsed.port || (parsed.protocol.startsWith('redis') ? 6379 : 5432)));
    } catch {
      // not a URL: nothing to watch
    }
  }
  for (const broker of env.KAFKA_BROKERS?.split(',') ?? []) {
    const port = Number(broker.split(':').pop());
    if (Number.isInteger(port) && port > 0) ports.push(port);
  }
  return ports;
}

/**
 * TCP sockets of this process that are still open to one of `ports`. Reads
 * Node's list of active handles (`process._getActiveHandles`, undocumented but
 * stable since Node 0.x; returns [] if it ever disappears).
 */
export function openSocketsTo(ports: readonly number[]): OpenSocket[] {
  const getHandles = (process as unknown as { _getActiveHandles?: () => unknown[] })._getActiveHandles;
  if (typeof getHandles !== 'function') return [];
  return getHandles
    .call(process)
    .filter((h): h is net.Socket => h instanceof net.Socket && !h.destroyed)
    .filter((s) => s.remotePort !== undefined && ports.includes(s.remotePort))
    .map((s) => ({ remoteAddress: s.remoteAddress, remotePort: s.remotePort, localPort: s.localPort }));
}
