import type { Assignment } from '../message-bus.ts';

/** What the group needs from a member (the in-memory consumer). */
export interface GroupMember {
  readonly memberId: string;
  readonly topics: string[];
  /** Stops the member's partition loops and waits for in-flight handlers. */
  revoke(): Promise<void>;
  /** Hands the member its new partitions; resolves after its `onAssigned` ran. */
  assign(assignment: Assignment): Promise<void>;
}

/**
 * An in-memory consumer group: members, generation, committed offsets.
 * Rebalances are eager (Kafka's classic protocol): every member gives all its
 * partitions back, then partitions are dealt round-robin over the members
 * sorted by id (kafkajs's default `RoundRobinAssigner`).
 */
export class MemoryGroup {
  readonly groupId: string;
  generation = 0;
  readonly members: GroupMember[] = [];
  /** `topic:partition` → next offset to read. */
  readonly committed = new Map<string, number>();
  /** `topic:partition` → memberId in the current generation. */
  readonly owners = new Map<string, string>();
  #queue: Promise<void> = Promise.resolve();
  readonly #partitionCount: (topic: string) => number;

  constructor(groupId: string, partitionCount: (topic: string) => number) {
    this.groupId = groupId;
    this.#partitionCount = partitionCount;
  }

  /** Adds a member and rebalances; resolves when the new assignment is in place. */
  join(member: GroupMember): Promise<void> {
    return this.#rebalance(() => {
      this.members.push(member);
    }, true);
  }

  /** Removes a member after it gave its partitions back (graceful leave). */
  leave(member: GroupMember): Promise<void> {
    return this.#rebalance(() => {
      const index = this.members.indexOf(member);
      if (index >= 0) this.members.splice(index, 1);
    }, true);
  }

  /**
   * Removes a member without waiting for it (a crash, or a session timeout):
   * its in-flight handlers may still run, but it can no longer commit.
   */
  evict(member: GroupMember): Promise<void> {
    const index = this.members.indexOf(member);
    if (index >= 0) this.members.splice(index, 1);
    for (const [key, owner] of this.owners) if (owner === member.memberId) this.owners.delete(key);
    return this.#rebalance(() => {}, true);
  }

  /** Whether `memberId` may commit `topic:partition` in `generation`. */
  mayCommit(memberId: string, generation: number, topic: string, partition: number): boolean {
    return this.generation === generation && this.owners.get(`${topic}:${partition}`) === memberId;
  }

  /** Commits `nextOffset` if the member still owns the partition in this generation. */
  commit(memberId: string, generation: number, topic: string, partition: number, nextOffset: number): boolean {
    if (!this.mayCommit(memberId, generation, topic, partition)) return false;
    this.committed.set(`${topic}:${partition}`, nextOffset);
    return true;
  }

  #rebalance(change: () => void, revokeAll: boolean): Promise<void> {
    const run = async () => {
      if (revokeAll) {
        this.owners.clear();
        await Promise.all(this.members.map((member) => member.revoke()));
      }
      change();
      this.generation += 1;
      const generation = this.generation;
      const members = [...this.members].sort((a, b) => a.memberId.localeCompare(b.memberId));
      const assignments = new Map<string, Record<string, number[]>>(members.map((m) => [m.memberId, {}]));
      const topics = [...new Set(members.flatMap((m) => m.topics))].sort();
      let cursor = 0;
      for (const topic of topics) {
        const subscribers = members.filter((m) => m.topics.includes(topic));
        if (subscribers.length === 0) continue;
        for (let partition = 0; partition < this.#partitionCount(topic); partition++) {
          const member = subscribers[cursor % subscribers.length]!;
          cursor += 1;
          const mine = assignments.get(member.memberId)!;
          const list = mine[topic] ?? [];
          list.push(partition);
          mine[topic] = list;
          this.owners.set(`${topic}:${partition}`, member.memberId);
        }
      }
      await Promise.all(
        members.map((member) =>
          member.assign({ partitions: assignments.get(member.memberId)!, generation, memberId: member.memberId }),
        ),
      );
    };
    const next = this.#queue.then(run, run);
    this.#queue = next.catch(() => {});
    return next;
  }
}
