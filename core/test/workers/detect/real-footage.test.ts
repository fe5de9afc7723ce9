import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedAsset } from '../../../../test/support/index.ts';
import { detectEnvSchema, detectOptionsFromEnv } from '../../../src/workers/detect/handler.ts';
import { Detector, readDetectionsFile, runDetect } from '../../../src/workers/detect/index.ts';
import { readModelCard, scoreFloorsOf } from '../../../src/workers/detect/model/model-card.ts';

const clip = sharedAsset('footage/tsukuba-left.mp4');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-real-footage-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * The default detector as the stage opens it (model card floors, merged person score) on a real
 * static camera: with one 0.1 floor it wrote 300 boxes per frame (89 % under 0.3) and warned that
 * the model looks wrong; with the card's floors it must look like a football pitch.
 */
describe.skipIf(!clip)('default detector on a real camera (tsukuba-left)', () => {
  it('writes a plausible number of boxes per frame and no "model looks wrong" warning', async () => {
    const options = await detectOptionsFromEnv(loadConfig(detectEnvSchema, {}));
    const floors = scoreFloorsOf((await readModelCard((options.model as { path: string }).path))!.tracker);
    expect(options.classScoreFloors).toMatchObject({ player: floors.player, ball: floors.ball });
    const detector = await Detector.open(options);
    try {
      const outputPath = join(dir, 'detections.jsonl');
      const summary = await runDetect({ inputPath: clip!, outputPath, detector, analysisFps: 1 });
      expect(summary.warnings).toEqual([]);
      const file = await readDetectionsFile(outputPath);
      expect(file.header.warnings).toBeUndefined();
      expect(file.header.model.version).toBe('player-detector-3.4');
      // The card's person verifier rescored the people (player-detector 3.3).
      expect(file.header.model.verifier?.sha256).toMatch(/^[0-9a-f]{64}$/);
      // And the card's ball verifier the balls (player-detector 3.4).
      expect(file.header.model.ballVerifier?.sha256).toMatch(/^[0-9a-f]{64}$/);
      const people = file.frames.map((f) => f.detections.filter((d) => d.class !== 'ball').length);
      const boxesPerFrame = summary.detections / summary.frames;
      // ~23 people on the pitch plus touchline staff; the old floor gave 300 (the cap).
      expect(boxesPerFrame).toBeLessThan(60);
      expect(Math.min(...people)).toBeGreaterThanOrEqual(10);
      for (const f of file.frames)
        for (const d of f.detections) expect(d.score).toBeGreaterThanOrEqual(floors[d.class]!);
    } finally {
      await detector.close();
    }
  }, 600_000);
});
