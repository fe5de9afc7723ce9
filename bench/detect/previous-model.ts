/**
 * The default detector (shipped) against the release before it (baseline), as the detect stage runs
 * them: the stage handler at the shipped defaults (10 analysed fps, auto tiling with the segment's
 * person height given, tile strips, `DETECT_PRECISION=auto`: each model's own int8 rendition on the
 * CPU) on one segment of a synthetic match's panorama (segment-detect.ts; `--camera-width` 1280 =
 * the demo's 2880×392, 640 = the cluster bench's 1440×196), both open in this process, after a
 * warm-up each, alternating `--runs` times. CPU = this process and its reaped ffmpeg children.
 *
 * The previous release (its ONNX file, its int8 rendition and its model card `metrics.json`) is read
 * from git at `--rev` into a temporary folder, so the baseline is exactly what that commit shipped.
 * What the two find: the model card (`evaluate.py`), `bench/detect/real-frames.ts` and the demos'
 * HOTA in bench/README.md.
 *
 *   node bench/detect/previous-model.ts [--rev 3c7fafb] [--previous-version player-detector-2.2]
 *     [--camera-width 1280,640] [--segment-s 4] [--runs 3]
 *
 * Writes bench/results/detect-previous-model.json.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_MODEL_PERSON_HEIGHT_PX } from '../../core/src/workers/detect/handler.ts';
import { compareSegmentDetect, segmentBenchArgs, writeSegmentBench } from './segment-detect.ts';

const MODEL_DIR = 'core/models/player-detector';
const FILES = ['player-detector.onnx', 'player-detector-int8.onnx', 'metrics.json'];

const args = segmentBenchArgs({ rev: '3c7fafb', 'previous-version': 'player-detector-2.2' });
const { rev, 'previous-version': previousVersion } = args.extra;
const dir = await mkdtemp(join(tmpdir(), 'previous-model-'));
try {
  for (const file of FILES) {
    const { stdout } = await promisify(execFile)('git', ['show', `${rev}:${MODEL_DIR}/${file}`], {
      encoding: 'buffer',
      maxBuffer: 64 << 20,
    });
    await writeFile(join(dir, file), stdout);
  }
  const loadBefore = loadavg();
  const rows = await compareSegmentDetect(
    {
      [`${previousVersion} (git ${rev}, before)`]: {
        DETECT_MODEL_PATH: join(dir, FILES[0]!),
        DETECT_MODEL_VERSION: previousVersion,
        // The training scale the stage assumes for the repository's model (any other path: 72 px).
        DETECT_MODEL_PERSON_HEIGHT_PX: String(DEFAULT_MODEL_PERSON_HEIGHT_PX),
      },
      'default model (shipped)': {},
    },
    args,
  );
  await writeSegmentBench(
    'detect-previous-model.json',
    { segment_s: args.segmentS, runs: args.runs, previous: { rev, version: previousVersion } },
    rows,
    loadBefore,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
