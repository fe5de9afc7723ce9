import { describe, expect, it } from 'vitest';
import { newKafkaClusterId } from '../src/services/kafka-cluster-id.ts';

describe('newKafkaClusterId', () => {
  it('draws again when the id would start with "-" (argparse would read it as an option)', () => {
    // 0xF8 → first six bits 111110 = 62 → '-' in URL-safe base64.
    const draws = [Buffer.alloc(16, 0xf8), Buffer.alloc(16, 0x01)];
    let calls = 0;
    const id = newKafkaClusterId((size) => {
      expect(size).toBe(16);
      return draws[calls++] as Buffer;
    });
    expect(Buffer.alloc(16, 0xf8).toString('base64url').startsWith('-')).toBe(true);
    expect(calls).toBe(2);
    expect(id).toBe(Buffer.alloc(16, 0x01).toString('base64url'));
  });

  it('is 22 URL-safe base64 characters', () => {
    for (let i = 0; i < 200; i++) {
      const id = newKafkaClusterId();
      expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
    }
  });
});
