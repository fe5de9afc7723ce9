/**
 * Kafka's murmur2 hash and its default key partitioner, so the in-memory bus
 * puts a key on the same partition number as Kafka (and kafkajs's
 * `DefaultPartitioner`) would.
 *
 * Source: Apache Kafka `org.apache.kafka.common.utils.Utils.murmur2` and
 * `toPositive` (clients 0.10.2+, unchanged since), 32-bit int arithmetic.
 */
const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

/** Kafka's murmur2 of `data` as a signed 32-bit integer. */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = SEED ^ length;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k =
      (data[i4]! & 0xff) |
      ((data[i4 + 1]! & 0xff) << 8) |
      ((data[i4 + 2]! & 0xff) << 16) |
      ((data[i4 + 3]! & 0xff) << 24);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M);
    h ^= k;
  }
  const tail = length & ~3;
  const rest = length % 4;
  if (rest === 3) h ^= (data[tail + 2]! & 0xff) << 16;
  if (rest >= 2) h ^= (data[tail + 1]! & 0xff) << 8;
  if (rest >= 1) {
    h ^= data[tail]! & 0xff;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/**
 * The partition Kafka's default partitioner picks for a non-null key:
 * `toPositive(murmur2(utf8(key))) % partitionCount`.
 */
export function partitionForKey(key: string, partitionCount: number): number {
  return (murmur2(Buffer.from(key, 'utf8')) & 0x7fffffff) % partitionCount;
}
