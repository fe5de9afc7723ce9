/**
 * Vitest setup file (vitest.config.ts `setupFiles`): after every test file,
 * FAILS the file when it leaked
 * - a child process started with `spawnTracked()` that is still running (it is
 *   killed, with its process group, then reported), or
 * - a connection to Redis, PostgreSQL or Kafka (REDIS_URL, DATABASE_URL,
 *   KAFKA_BROKERS) still open 2 s after the file's own afterAll hooks.
 *
 * Setup-file hooks are registered first, so with vitest's default
 * `sequence.hooks: 'stack'` this afterAll runs after the file's own.
 */
import { afterAll } from 'vitest';
import { openSocketsTo, servicePorts } from './open-sockets.ts';
import { killTrackedChildren } from './processes.ts';
import { waitFor } from './wait-for.ts';

afterAll(async () => {
  const problems: string[] = [];

  const leakedChildren = await killTrackedChildren();
  for (const child of leakedChildren) {
    problems.push(`child process ${child.pid} (${child.command}) was still running; it has been killed`);
  }

  const ports = servicePorts();
  if (ports.length > 0) {
    try {
      // exact: this check handles the timeout itself (a leaked connection never closes).
      await waitFor(() => openSocketsTo(ports).length === 0, { timeoutMs: 2_000, exact: true, intervalMs: 50 });
    } catch {
      for (const socket of openSocketsTo(ports)) {
        problems.push(
          `a connection to ${socket.remoteAddress}:${socket.remotePort} (local port ${socket.localPort}) is still open: close your client (quit(), end(), disconnect(), close())`,
        );
      }
    }
  }

  if (problems.length > 0) {
    throw new Error(`leak check: this test file leaked\n- ${problems.join('\n- ')}`);
  }
});
