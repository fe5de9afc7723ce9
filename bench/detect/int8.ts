/**
 * The default model's int8 rendition (`DETECT_PRECISION=auto` on the CPU, shipped; train/quantize.py)
 * against the float model (`DETECT_PRECISION=fp32`, baseline), as the detect stage runs them: the
 * stage handler (10 analysed fps, auto tiling with the segment's person height given, tile strips) on
 * one segment of a synthetic match's panorama (segment-detect.ts; `--camera-width` 1280 = the demo's
 * 2880×392, 640 = the cluster bench's 1440×196), both open in this process, after a warm-up each,
 * alternating `--runs` times. CPU = this process and its reaped ffmpeg children. (What they find:
 * the tests in default-model.test.ts, the model card and the demos' HOTA in bench/README.md.)
 *
 *   node bench/detect/int8.ts [--camera-width 1280,640] [--segment-s 4] [--runs 3]
 *
 * Writes bench/results/detect-int8.json.
 */
import { loadavg } from 'node:os';
import { compareSegmentDetect, segmentBenchArgs, writeSegmentBench } from './segment-detect.ts';

const args = segmentBenchArgs();
const loadBefore = loadavg();
const rows = await compareSegmentDetect(
  { 'float (DETECT_PRECISION=fp32, before)': { DETECT_PRECISION: 'fp32' }, 'int8 rendition (shipped)': {} },
  args,
);
await writeSegmentBench('detect-int8.json', { segment_s: args.segmentS, runs: args.runs }, rows, loadBefore);
