import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PolyvisionError } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LocalArtifactIo, outputKey } from '../../../src/workers/detect/index.ts';
import { taskIdempotencyKey } from '../../../src/workers/runtime/stage-claims.ts';
import {
  matchOutputKey,
  readCarry,
  segmentClock,
  segmentOutputKey,
  segmentStartS,
  writeCarry,
} from '../../../src/workers/segment/index.ts';
import { segmentOf, segmentTask, storeFile } from './support.ts';

let root: string;
let io: LocalArtifactIo;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'pv-segment-keys-'));
  io = new LocalArtifactIo(join(root, 'store'));
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe('segment keys and clock', () => {
  it('keeps a whole-file job’s keys and puts a segment’s under segment-00000k/', () => {
    const whole = segmentTask('detect', []);
    const third = segmentTask('detect', [], segmentOf(3, 5, 10));
    expect(outputKey(whole, 'detections.jsonl')).toBe('org-1/match-1/detect/default/detections.jsonl');
    expect(outputKey(third, 'detections.jsonl')).toBe('org-1/match-1/detect/default/segment-000003/detections.jsonl');
    expect(segmentOutputKey(third, 'a', 'b')).toBe('org-1/match-1/detect/default/segment-000003/a/b');
    expect(matchOutputKey(third, 'hls', 'master.m3u8')).toBe('org-1/match-1/detect/default/match/hls/master.m3u8');
    expect(taskIdempotencyKey(whole)).toBe('detect:org-1:match-1:default');
    expect(taskIdempotencyKey(third)).toBe('detect:org-1:match-1:default:segment-000003');
  });

  it('maps a segment’s frame times onto the match clock', () => {
    const clock = segmentClock(segmentOf(3, 5, 10));
    expect(clock.toMatchMs(250)).toBe(30_250);
    expect(clock.toLocalMs(30_250)).toBe(250);
    expect(clock.final).toBe(false);
    const whole = segmentClock(undefined);
    expect(whole.toMatchMs(250)).toBe(250);
    expect(whole.segmented).toBe(false);
    expect(whole.final).toBe(true);
  });

  it('starts a first segment shorter than its slot at the slot end minus its length, any other at its slot', () => {
    expect(segmentStartS(segmentOf(0, 5, 4), 1.5)).toBe(2.5); // recording began 2.5 s into the slot
    expect(segmentStartS(segmentOf(0, 5, 4), 3.96)).toBe(0); // a frame short: fills its slot
    expect(segmentStartS(segmentOf(4, 5, 4), 1.5)).toBe(16); // the last one: recording ended inside its slot
    expect(segmentStartS(segmentOf(2, 5, 4), 3)).toBe(8); // a short one in the middle stays at its slot
    expect(segmentStartS(segmentOf(0, 1, 4), 1.5)).toBe(0); // the only segment: where it started is unknown
    expect(segmentStartS(undefined, 7)).toBe(0);
  });
});

describe('carry artifacts', () => {
  const schema = z.object({ n: z.number() });

  it('is absent for a whole-file job and the first segment, and round-trips between segments', async () => {
    expect(await readCarry(segmentTask('track', []), schema, io, root)).toBeNull();
    expect(await writeCarry(segmentTask('track', []), { n: 1 }, io, root)).toBeNull();
    expect(await readCarry(segmentTask('track', [], segmentOf(0, 3, 10)), schema, io, root)).toBeNull();
    const ref = await writeCarry(segmentTask('track', [], segmentOf(0, 3, 10)), { n: 7 }, io, root);
    expect(ref?.kind).toBe('track-carry');
    expect(await readCarry(segmentTask('track', [ref!], segmentOf(1, 3, 10)), schema, io, root)).toEqual({ n: 7 });
  });

  it('refuses a carry that is not JSON, of another stage or of a state that does not validate', async () => {
    const store = join(root, 'store');
    const garbage = await storeFile(store, 'org-1/match-1/x/garbage.json', '{not json', 'track-carry');
    const code = (p: Promise<unknown>) =>
      p.then(
        () => null,
        (e: unknown) => (e instanceof PolyvisionError ? [e.code, e.retriable] : e),
      );
    const second = segmentOf(1, 3, 10);
    expect(await code(readCarry(segmentTask('track', [garbage], second), schema, io, root))).toEqual([
      'carry_invalid',
      false,
    ]);
    const vcam = await writeCarry(segmentTask('vcam', [], segmentOf(0, 3, 10)), { n: 1 }, io, root);
    expect(
      await code(readCarry(segmentTask('track', [{ ...vcam!, kind: 'track-carry' }], second), schema, io, root)),
    ).toEqual(['carry_invalid', false]);
    const wrong = await writeCarry(segmentTask('track', [], segmentOf(0, 3, 10)), { n: 'x' }, io, root);
    expect(await code(readCarry(segmentTask('track', [wrong!], second), schema, io, root))).toEqual([
      'carry_invalid',
      false,
    ]);
    expect(await code(readCarry(segmentTask('track', [], second), schema, io, root))).toEqual(['carry_missing', false]);
  });
});
