import { createHash } from 'node:crypto';

/**
 * A deterministic UUID (version 5 layout, SHA-1 of `name`): the same report
 * of the same task always has the same `message_id`, so the orchestrator
 * applies it once however often it is re-sent (RFC 9562 §5.5).
 */
export function deterministicUuid(name: string): string {
  const hash = createHash('sha1').update(`polyvision:${name}`).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The message id of the report that an attempt was lost (`heartbeat_timeout`):
 * the reconciler and a worker that meets the expired claim send the same id,
 * so the job's owner applies it once.
 */
export function lostAttemptMessageId(taskMessageId: string): string {
  return deterministicUuid(`${taskMessageId}:stage.lost`);
}
