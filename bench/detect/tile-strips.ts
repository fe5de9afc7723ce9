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
import { median, openSegmentDetect, round3, segmentBenchArgs, writeSegmentBench } from './segment-detect.ts';

const { cameraWidths, segmentS, runs } = segmentBenchArgs();
const loadBefore = loadavg();
const rows: Record<string, unknown>[] = [];
for (const width of cameraWidths) {
  const variants = {
    'tiles (DETECT_TILE_STRIPS=off, before)': await openSegmentDetect(width, segmentS, { DETECT_TILE_STRIPS: 'off' }),
    'strips (shipped)': await openSegmentDetect(width, segmentS),
  };
  try {
    const first = await Object.values(variants)[0]!.detect(); // measures the person height
    const params = { person_height_px: first.personHeightPx };
    const cpu: Record<string, number[]> = {};
    const plans: Record<string, unknown> = {};
    for (const [name, segment] of Object.entries(variants)) {
      await segment.detect(params); // warm-up
      cpu[name] = [];
    }
    for (let r = 0; r < runs; r++)
      for (const [name, segment] of Object.entries(variants)) {
        const result = await segment.detect(params);
        cpu[name]!.push(result.cpuS);
        plans[name] = result.tiling;
      }
    const names = Object.keys(variants);
    const base = median(cpu[names[0]!]!);
    for (const name of names) {
      const row = {
        camera_width: width,
        variant: name,
        tiling: plans[name],
        person_height_px: first.personHeightPx,
        segment_s: segmentS,
        cpu_s: cpu[name]!.map(round3),
        cpu_s_per_video_s: round3(median(cpu[name]!) / segmentS),
        ratio: round3(median(cpu[name]!) / base),
      };
      rows.push(row);
      process.stdout.write(`${JSON.stringify(row)}\n`);
    }
  } finally {
    for (const segment of Object.values(variants)) await segment.close();
  }
}
await writeSegmentBench('detect-tile-strips.json', { segment_s: segmentS, runs }, rows, loadBefore);
