/**
 * What detect's first pass costs a match segment, and what handing the match's measured person
 * height to later segments saves (issue #18 item 4; `matchPersonHeight` in
 * core/src/orchestrator/state/match-dispatch.ts).
 *
 * The detect stage handler as a worker ships it (10 analysed fps, the default model, auto tiling) on
 * one segment of a synthetic match's panorama (segment-detect.ts; `--camera-width` 1280 = the demo's
 * 2880×392, 640 = the cluster bench's 1440×196), `--segment-s` seconds. After a warm-up run,
 * alternating `--runs` times: `measured` (no hint: the first pass decodes 4 frames by seeking and
 * detects them at the native scale, then the main pass) and `given` (task `params.person_height_px`
 * = what the measured run found: the main pass only; the same tiles, checked).
 *
 *   node bench/detect/first-pass.ts [--camera-width 1280,640] [--segment-s 4] [--runs 3]
 *
 * Writes bench/results/detect-first-pass.json.
 */
import { loadavg } from 'node:os';
import { median, openSegmentDetect, round3, segmentBenchArgs, writeSegmentBench } from './segment-detect.ts';

const { cameraWidths, segmentS, runs } = segmentBenchArgs();
const loadBefore = loadavg();
const rows: Record<string, unknown>[] = [];
for (const width of cameraWidths) {
  const segment = await openSegmentDetect(width, segmentS);
  try {
    await segment.detect(); // warm-up: the session's first inferences, the segment in the page cache
    const measured: number[] = [];
    const given: number[] = [];
    let last = await segment.detect();
    for (let r = 0; r < runs; r++) {
      if (r > 0) last = await segment.detect();
      measured.push(last.cpuS);
      const g = await segment.detect({ person_height_px: last.personHeightPx });
      given.push(g.cpuS);
      const { source: _a, ...planned } = last.tiling;
      const { source: _b, ...planWhenGiven } = g.tiling;
      if (JSON.stringify(planned) !== JSON.stringify(planWhenGiven)) {
        throw new Error(
          `the given height planned other tiles: ${JSON.stringify(g.tiling)} vs ${JSON.stringify(last.tiling)}`,
        );
      }
    }
    const row = {
      camera_width: width,
      tiling: last.tiling,
      person_height_px: last.personHeightPx,
      segment_s: segmentS,
      measured_cpu_s: measured.map(round3),
      given_cpu_s: given.map(round3),
      measured_cpu_s_per_video_s: round3(median(measured) / segmentS),
      given_cpu_s_per_video_s: round3(median(given) / segmentS),
      ratio: round3(median(given) / median(measured)),
    };
    rows.push(row);
    process.stdout.write(`${JSON.stringify(row)}\n`);
  } finally {
    await segment.close();
  }
}
await writeSegmentBench('detect-first-pass.json', { segment_s: segmentS, runs }, rows, loadBefore);
