/**
 * The match recorder hands slots to the stitcher in time order (`slotsUpTo`): a slot completed by
 * every camera takes the earlier slots still waiting with it, earliest first, so the core receives a
 * match's panoramas in slot order and opens the match job at its first slot.
 */
import { describe, expect, it } from 'vitest';
import { slotsUpTo } from '../src/recording/index.ts';

describe('slotsUpTo', () => {
  it('gives the waiting slots up to the completed one, earliest first, and leaves later ones waiting', () => {
    // Slot 100 waits for a camera that started late; 101 is complete; 102 is still recording.
    expect(
      slotsUpTo(
        new Map([
          [101, 'b'],
          [102, 'c'],
          [100, 'a'],
        ]).keys(),
        101,
      ),
    ).toEqual([100, 101]);
    expect(slotsUpTo([102, 100, 101], 102)).toEqual([100, 101, 102]);
    expect(slotsUpTo([101, 102], 100)).toEqual([]);
  });
});
