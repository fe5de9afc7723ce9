import { describe, expect, it } from 'vitest';
import { closeAll } from '../index.ts';

describe('closeAll', () => {
  it('runs every step in order, even after one failed, and throws that failure', async () => {
    const ran: string[] = [];
    const boom = new Error('ingest would not stop');
    await expect(
      closeAll([
        async () => ran.push('ingest'),
        async () => {
          ran.push('ses');
          throw boom;
        },
        async () => ran.push('schema'),
      ]),
    ).rejects.toBe(boom);
    expect(ran).toEqual(['ingest', 'ses', 'schema']);
  });

  it('throws an AggregateError naming what was closing when several steps fail; resolves when none does', async () => {
    const failing = closeAll(
      [() => Promise.reject(new Error('a')), () => Promise.reject(new Error('b'))],
      'closing the world',
    );
    await expect(failing).rejects.toBeInstanceOf(AggregateError);
    await expect(failing).rejects.toMatchObject({
      message: 'closing the world',
      errors: [expect.objectContaining({ message: 'a' }), expect.objectContaining({ message: 'b' })],
    });
    await expect(closeAll([async () => undefined])).resolves.toBeUndefined();
  });
});
