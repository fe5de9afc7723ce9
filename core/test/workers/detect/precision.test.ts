import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectEnvSchema, detectOptionsFromEnv } from '../../../src/workers/detect/handler.ts';
import { Detector, int8Rendition, resolveModel, sha256OfFile } from '../../../src/workers/detect/index.ts';

/** The repository's detector, its int8 rendition and its card (committed: nothing from ../shared). */
const MODELS = new URL('../../../models/player-detector/', import.meta.url).pathname;
const FLOAT = join(MODELS, 'player-detector.onnx');
const INT8 = join(MODELS, 'player-detector-int8.onnx');
const CLASS_MAP = { 0: 'player', 1: 'goalkeeper', 2: 'referee', 3: 'ball' } as const;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-precision-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A folder holding a copy of the float model and `card` as its metrics.json. */
async function folder(name: string, card: unknown): Promise<string> {
  const at = join(dir, name);
  await rm(at, { recursive: true, force: true });
  await mkdir(at);
  await copyFile(FLOAT, join(at, 'player-detector.onnx'));
  if (card !== undefined) await writeFile(join(at, 'metrics.json'), JSON.stringify(card));
  return join(at, 'player-detector.onnx');
}

describe('the int8 rendition', () => {
  it("is the committed card's, made from the committed float model", async () => {
    const found = await int8Rendition(await resolveModel({ path: FLOAT }), 'int8');
    expect(found).toEqual({ path: INT8, sha256: await sha256OfFile(INT8), precision: 'int8' });
    const card = JSON.parse(await readFile(join(MODELS, 'metrics.json'), 'utf8'));
    expect(card.renditions[0].source_sha256).toBe(await sha256OfFile(FLOAT));
  });

  it('runs on the CPU by default and not when fp32 is asked for; the detector says which file it runs', async () => {
    const auto = await Detector.open({ model: { path: FLOAT }, modelVersion: 't', classMap: CLASS_MAP });
    const fp32 = await Detector.open({
      model: { path: FLOAT },
      modelVersion: 't',
      classMap: CLASS_MAP,
      precision: 'fp32',
    });
    try {
      expect(auto.info).toMatchObject({
        executionProvider: 'cpu',
        precision: 'int8',
        sha256: await sha256OfFile(INT8),
      });
      expect(fp32.info).toMatchObject({
        executionProvider: 'cpu',
        precision: 'fp32',
        sha256: await sha256OfFile(FLOAT),
      });
      // The same graph contract: a symbolic input, fitted tiles and strips.
      expect(auto.info).toMatchObject({ inputWidth: 1280, inputHeight: 720, inputFitted: true, tileStrips: true });
    } finally {
      await auto.close();
      await fp32.close();
    }
  });

  it('is not used when it is missing, stale or altered: auto runs the float model, int8 is a clear error', async () => {
    const int8Sha256 = await sha256OfFile(INT8);
    const floatSha256 = await sha256OfFile(FLOAT);
    const rendition = { file: 'player-detector-int8.onnx', precision: 'int8', sha256: int8Sha256 };
    const tracker = { high: 0.641, low: 0.481 };
    const cases: Array<[string, unknown, RegExp]> = [
      ['no-card', undefined, /lists no int8 rendition/],
      ['no-rendition', { tracker }, /lists no int8 rendition/],
      ['stale', { tracker, renditions: [{ ...rendition, source_sha256: 'b'.repeat(64) }] }, /made from another model/],
      ['missing-file', { tracker, renditions: [{ ...rendition, source_sha256: floatSha256 }] }, /cannot be read/],
    ];
    for (const [name, card, message] of cases) {
      const path = await folder(name, card);
      const model = await resolveModel({ path });
      expect(await int8Rendition(model, 'auto'), name).toBeNull();
      await expect(int8Rendition(model, 'int8'), name).rejects.toMatchObject({
        code: 'detect_options_invalid',
        retriable: false,
        message: expect.stringMatching(message),
      });
      expect(await int8Rendition(model, 'fp32'), name).toBeNull();
    }
    // A rendition file whose bytes are not the ones the card hashed.
    const altered = await folder('altered', { tracker, renditions: [{ ...rendition, source_sha256: floatSha256 }] });
    await writeFile(join(dir, 'altered', 'player-detector-int8.onnx'), 'not the rendition');
    expect(await int8Rendition(await resolveModel({ path: altered }), 'auto')).toBeNull();
    await expect(int8Rendition(await resolveModel({ path: altered }), 'int8')).rejects.toThrow(/sha256/);
    // The detector opens the float model under auto, and refuses int8.
    const detector = await Detector.open({ model: { path: altered }, modelVersion: 't', classMap: CLASS_MAP });
    try {
      expect(detector.info).toMatchObject({ precision: 'fp32', sha256: floatSha256 });
    } finally {
      await detector.close();
    }
    await expect(
      Detector.open({ model: { path: altered }, modelVersion: 't', classMap: CLASS_MAP, precision: 'int8' }),
    ).rejects.toMatchObject({ code: 'detect_options_invalid' });
  });

  it('is chosen by DETECT_PRECISION; it and DETECT_NMS_CONTAINMENT reach the options, a bad value names its variable', async () => {
    expect(await detectOptionsFromEnv(loadConfig(detectEnvSchema, {}))).toMatchObject({ precision: 'auto' });
    const options = await detectOptionsFromEnv(
      loadConfig(detectEnvSchema, { DETECT_PRECISION: 'fp32', DETECT_NMS_CONTAINMENT: '1' }),
    );
    expect(options).toMatchObject({ precision: 'fp32', nmsContainmentThreshold: 1 });
    expect(() => loadConfig(detectEnvSchema, { DETECT_PRECISION: 'fp16' })).toThrow(/DETECT_PRECISION/);
    expect(() => loadConfig(detectEnvSchema, { DETECT_NMS_CONTAINMENT: '2' })).toThrow(/DETECT_NMS_CONTAINMENT/);
  });
});
