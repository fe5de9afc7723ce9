import type { MessageError, StageTask } from '@polyvision/shared';
import type { Redis } from 'ioredis';
import type { ClaimResult, StageClaimStore } from './stage-claims.ts';
import { taskIdempotencyKey } from './stage-claims.ts';
import type { StageResult } from './stage-handler.ts';

const PROCESSING_TTL_MS = 2 * 3600 * 1000;
const COMPLETED_TTL_MS = 7 * 24 * 3600 * 1000;

/**
 * Keeps the seeds' Redis stage keys (orchestration-decision.md)
 * `{stage}:{organization_id}:{match_id}:{model_version}` = `processing` (2 h)
 * / `completed` (7 days), deleted on failure, on top of a claim store that is
 * the final word (`PgStageClaimStore`).
 *
 * The keys tell operators and other tools what runs where; the claim store
 * decides. Redis errors are ignored, so Redis being down never causes a
 * duplicate run nor stops a worker.
 */
export class RedisStageKeys implements StageClaimStore {
  readonly #inner: StageClaimStore;
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(inner: StageClaimStore, redis: Redis, prefix = '') {
    this.#inner = inner;
    this.#redis = redis;
    this.#prefix = prefix;
  }

  async claim(task: StageTask, owner: string, leaseMs: number): Promise<ClaimResult> {
    const result = await this.#inner.claim(task, owner, leaseMs);
    if (result.state === 'claimed') await this.#set(task, 'processing', PROCESSING_TTL_MS);
    return result;
  }

  renew(task: StageTask, owner: string, leaseMs: number): Promise<boolean> {
    return this.#inner.renew(task, owner, leaseMs);
  }

  async complete(task: StageTask, owner: string, result: StageResult): Promise<void> {
    await this.#inner.complete(task, owner, result);
    await this.#set(task, 'completed', COMPLETED_TTL_MS);
  }

  async fail(task: StageTask, owner: string, error: MessageError): Promise<void> {
    await this.#inner.fail(task, owner, error);
    await this.#redis.del(this.#prefix + taskIdempotencyKey(task)).catch(() => 0);
  }

  async release(task: StageTask, owner: string): Promise<void> {
    await this.#inner.release(task, owner);
    await this.#redis.del(this.#prefix + taskIdempotencyKey(task)).catch(() => 0);
  }

  async #set(task: StageTask, value: string, ttlMs: number) {
    await this.#redis.set(this.#prefix + taskIdempotencyKey(task), value, 'PX', ttlMs).catch(() => null);
  }
}
