/**
 * A row of scale-chosen tiles inferred as one strip (`DetectOptions.tileStrips`, shipped) against
 * the tiles as planned (`DETECT_TILE_STRIPS=off`, baseline), as the detect stage runs them: the
 * stage handler (10 analysed fps, the default model, auto tiling with the segment's person height
 * given, as a match's later segments get it) on one segment of a synthetic match's panorama
 * (segment-detect.ts; `--camera-width` 1280 = the demo's 2880×392, 640 = the cluster bench's
 * 1440×196), both handlers open in this process, after a warm-up each, alternating `--runs` times.
 * CPU = this process and its reaped ffmpeg children. (Whether the strips find what the tiles find:
 * the test in default-model.test.ts and the demos' HOTA in bench/README.md.)
 *
 *   node bench/detect/tile-strips.ts [--camera-width 1280,640] [--segment-s 4] [--runs 3]
 *
 * Writes bench/results/detect-tile-strips.json.
 */
import { loadavg } from 'node:os';
import { compareSegmentDetect, segmentBenchArgs, writeSegmentBench } from './segment-detect.ts';

const args = segmentBenchArgs();
const loadBefore = loadavg();
const rows = await compareSegmentDetect(
  { 'tiles (DETECT_TILE_STRIPS=off, before)': { DETECT_TILE_STRIPS: 'off' }, 'strips (shipped)': {} },
  args,
);
await writeSegmentBench('detect-tile-strips.json', { segment_s: args.segmentS, runs: args.runs }, rows, loadBefore);
