import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { PolyvisionError } from '@polyvision/shared';
import type { Assignment, BusConsumer, BusRecord, ConsumerOptions, RunHandlers } from '../message-bus.ts';
import type { GroupMember, MemoryGroup } from './memory-group.ts';
import type { MemoryLog } from './memory-log.ts';

interface PartitionLoop {
  topic: string;
  partition: number;
  /** Resolves when the loop has returned (its in-flight handler finished). */
  done: Promise<void>;
  wake(): void;
}

/**
 * A member of an in-memory consumer group. Each assigned partition runs its
 * own loop: read at the committed offset, call the handler, commit, move on;
 * on a throw, wait `retryBackoffMs` and hand the same record again.
 */
export class MemoryConsumer implements BusConsumer, GroupMember {
  readonly memberId = `member-${randomUUID()}`;
  readonly topics: string[];
  readonly #options: ConsumerOptions;
  readonly #group: MemoryGroup;
  readonly #log: (topic: string, partition: number) => MemoryLog;
  #handlers: RunHandlers | null = null;
  #generation = -1;
  #loops: PartitionLoop[] = [];
  readonly #paused = new Set<string>();
  #state: 'idle' | 'running' | 'closed' | 'crashed' = 'idle';

  constructor(group: MemoryGroup, log: (topic: string, partition: number) => MemoryLog, options: ConsumerOptions) {
    this.#group = group;
    this.#log = log;
    this.#options = options;
    this.topics = [...options.topics];
  }

  async run(handlers: RunHandlers): Promise<void> {
    if (this.#state !== 'idle') throw new PolyvisionError('bus_consumer_state', `consumer is ${this.#state}`);
    if (!handlers.eachMessage && !handlers.eachBatch) {
      throw new PolyvisionError('bus_no_handler', 'run() needs eachMessage or eachBatch');
    }
    this.#handlers = handlers;
    this.#state = 'running';
    await this.#group.join(this);
  }

  pause(topic: string, partitions?: number[]): void {
    for (const partition of partitions ?? this.#partitionsOf(topic)) this.#paused.add(`${topic}:${partition}`);
  }

  resume(topic: string, partitions?: number[]): void {
    for (const partition of partitions ?? this.#partitionsOf(topic)) this.#paused.delete(`${topic}:${partition}`);
    for (const loop of this.#loops) loop.wake();
  }

  async close(): Promise<void> {
    if (this.#state !== 'running') {
      this.#state = 'closed';
      return;
    }
    await this.#group.leave(this);
    this.#state = 'closed';
  }

  /**
   * Test hook: the member dies without a word (kill -9). The group rebalances
   * at once (as after Kafka's session timeout); handlers already running go on
   * as zombies whose commits are refused.
   */
  async simulateCrash(): Promise<void> {
    this.#state = 'crashed';
    this.#generation = -1;
    for (const loop of this.#loops) loop.wake();
    this.#loops = [];
    await this.#group.evict(this);
  }

  async revoke(): Promise<void> {
    this.#generation = -1;
    const loops = this.#loops;
    this.#loops = [];
    for (const loop of loops) loop.wake();
    await this.#options.onRevoked?.();
    await Promise.all(loops.map((loop) => loop.done));
  }

  async assign(assignment: Assignment): Promise<void> {
    if (this.#state !== 'running') return;
    for (const [topic, partitions] of Object.entries(assignment.partitions)) {
      for (const partition of partitions) {
        const key = `${topic}:${partition}`;
        if (!this.#group.committed.has(key) && this.#options.fromBeginning === false) {
          this.#group.committed.set(key, this.#log(topic, partition).records.length);
        }
      }
    }
    await this.#options.onAssigned?.(assignment);
    this.#generation = assignment.generation ?? -1;
    for (const [topic, partitions] of Object.entries(assignment.partitions)) {
      for (const partition of partitions) this.#loops.push(this.#startLoop(topic, partition, this.#generation));
    }
  }

  #partitionsOf(topic: string): number[] {
    return this.#loops.filter((loop) => loop.topic === topic).map((loop) => loop.partition);
  }

  #startLoop(topic: string, partition: number, generation: number): PartitionLoop {
    let wakeCurrent: () => void = () => {};
    const loop: PartitionLoop = { topic, partition, done: Promise.resolve(), wake: () => wakeCurrent() };
    const log = this.#log(topic, partition);
    const active = () => this.#generation === generation && this.#state === 'running';
    const backoffMs = this.#options.retryBackoffMs ?? 200;
    const context = { heartbeat: async () => {} };
    const body = async () => {
      let position = this.#group.committed.get(`${topic}:${partition}`) ?? 0;
      while (active()) {
        const available = log.records.length - position;
        if (available <= 0 || this.#paused.has(`${topic}:${partition}`)) {
          await new Promise<void>((resolve) => {
            const off = log.onAppend(resolve);
            wakeCurrent = () => {
              off();
              resolve();
            };
            if (!active() || (log.records.length > position && !this.#paused.has(`${topic}:${partition}`))) {
              wakeCurrent();
            }
          });
          continue;
        }
        const records: BusRecord[] = this.#handlers!.eachBatch
          ? log.records.slice(position, position + 500)
          : [log.records[position]!];
        try {
          if (this.#handlers!.eachBatch) await this.#handlers!.eachBatch(records, context);
          else await this.#handlers!.eachMessage!(records[0]!, context);
        } catch {
          if (!active()) return;
          await sleep(backoffMs);
          continue;
        }
        const next = position + records.length;
        if (!this.#group.commit(this.memberId, generation, topic, partition, next)) return;
        position = next;
      }
    };
    loop.done = body();
    return loop;
  }
}
