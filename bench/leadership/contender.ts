/**
 * One leader-election contender process for bench/leadership/failover.ts.
 *
 *   node bench/leadership/contender.ts <redisUrl> <key> <leaseMs> <id> [notify]
 *
 * Campaigns for `key` on Redis with the production Elections code, and
 * writes one JSON line per event on stdout:
 *   {"event":"ready"|"leader"|"lost"|"released","id","atMs","term"?,"code"?}
 * `atMs` is `performance.timeOrigin + performance.now()` (wall-clock ms with
 * sub-ms resolution, comparable across processes on one host).
 * `released` and `lost` are written when the leadership's signal aborts,
 * i.e. when this process stops acting as leader (for a release: before the
 * compare-and-delete is sent).
 * With `notify`, the store gets a subscriber connection: followers hear the
 * release notice (Redis pub/sub) and try at once instead of at their next retry.
 * SIGTERM releases leadership (compare-and-delete) and exits 0; EOF on stdin
 * (the parent went away) exits at once.
 */

import { Elections, RedisTtlStore } from '../../shared/src/leadership/index.ts';
import { Redis } from './redis-client.ts';

const [redisUrl, key, leaseArg, id, notify] = process.argv.slice(2);
if (!redisUrl || !key || !leaseArg || !id) {
  process.stderr.write('usage: contender.ts <redisUrl> <key> <leaseMs> <id>\n');
  process.exit(2);
}
const leaseMs = Number(leaseArg);

const emit = (event: string, extra: Record<string, unknown> = {}): void => {
  process.stdout.write(
    `${JSON.stringify({ event, id, atMs: performance.timeOrigin + performance.now(), ...extra })}\n`,
  );
};

const redis = new Redis(redisUrl);
const subscriber = notify === 'notify' ? new Redis(redisUrl) : undefined;
const elections = new Elections(new RedisTtlStore(redis, subscriber ? { subscriber } : {}));
const stop = new AbortController();
const value = `${id}:${process.pid}`;

process.stdin.on('end', () => process.exit(1));
process.stdin.resume();
process.once('SIGTERM', () => {
  stop.abort();
  void elections.close().finally(() => {
    redis.disconnect();
    subscriber?.disconnect();
    process.exit(0);
  });
});

await redis.ping();
emit('ready');
while (!stop.signal.aborted) {
  const leadership = await elections.campaign(key, value, leaseMs, { signal: stop.signal }).catch(() => null);
  if (!leadership) break;
  emit('leader', { term: leadership.term });
  await new Promise<void>((resolve) =>
    // Runs inside the abort, before a release's compare-and-delete is sent: the moment this process steps down.
    leadership.signal.addEventListener(
      'abort',
      () => {
        const code = leadership.signal.reason?.code;
        emit(stop.signal.aborted ? 'released' : 'lost', { term: leadership.term, code });
        resolve();
      },
      { once: true },
    ),
  );
}
