import { Partitioners } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { murmur2, partitionForKey } from '../../src/bus/murmur2.ts';

describe('murmur2 partitioner', () => {
  it('puts every key on the same partition as kafkajs DefaultPartitioner (Java client compatible)', () => {
    const kafkajs = Partitioners.DefaultPartitioner();
    const partitionMetadata = Array.from({ length: 12 }, (_, partitionId) => ({
      partitionId,
      leader: 0,
      partitionErrorCode: 0,
      replicas: [0],
      isr: [0],
    }));
    const keys = ['', 'a', 'ab', 'abc', 'abcd', 'org-1:match-A', 'ключ:матч', 'x'.repeat(257)];
    for (let i = 0; i < 500; i++) keys.push(`org-${i % 7}:match-${i}`);
    for (const key of keys) {
      const expected = kafkajs({ topic: 't', partitionMetadata, message: { key, value: null } });
      expect(partitionForKey(key, 12), key).toBe(expected);
    }
  });

  it('matches known Kafka murmur2 values', () => {
    // Values from Apache Kafka's UtilsTest.testMurmur2.
    expect(murmur2(Buffer.from('21'))).toBe(-973932308);
    expect(murmur2(Buffer.from('foobar'))).toBe(-790332482);
    expect(murmur2(Buffer.from('a-little-bit-long-string'))).toBe(-985981536);
    expect(murmur2(Buffer.from('a-little-bit-longer-string'))).toBe(-1486304829);
    expect(murmur2(Buffer.from('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'))).toBe(-58897971);
  });
});
