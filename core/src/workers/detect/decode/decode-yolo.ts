import type { Candidate } from '../nms.ts';
import { type DecodeOptions, lowestFloor, scoreCell } from './cell-score.ts';
import { YOLO_STRIDES } from './layout.ts';

/**
 * Decodes one image of a YOLOv8/YOLO11 output `[4+C, N]` (channel-major,
 * starting at `offset`) into candidates in model-input pixels.
 * Source: Ultralytics `ops.non_max_suppression` input convention (cx, cy, w, h, class scores; no objectness).
 */
export function decodeYolov8(
  data: Float32Array,
  offset: number,
  anchorCount: number,
  options: DecodeOptions,
): Candidate[] {
  const N = anchorCount;
  const out: Candidate[] = [];
  // Fast path: a cell whose class scores all sit below every floor holds nothing (most cells).
  const floor = Math.min(lowestFloor(options), options.personClassIds?.size ? lowestPersonPart(options) : 1);
  let cell = 0;
  const probabilityOf = (c: number) => data[offset + (4 + c) * N + cell]!;
  for (let n = 0; n < N; n++) {
    let any = false;
    for (const c of options.classIds) {
      if (data[offset + (4 + c) * N + n]! >= floor) {
        any = true;
        break;
      }
    }
    if (!any) continue;
    cell = n;
    const scored = scoreCell(probabilityOf, options);
    if (!scored) continue;
    const cx = data[offset + n]!;
    const cy = data[offset + N + n]!;
    const w = data[offset + 2 * N + n]!;
    const h = data[offset + 3 * N + n]!;
    out.push({ box: [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], ...scored });
  }
  return out;
}

/**
 * The smallest single-class probability that can still lift a merged person score to its floor:
 * with k person classes each below q, the merged score is below `1 − (1 − q)^k`, so a cell needs one
 * class at ≥ `1 − (1 − floor)^(1/k)` at least.
 */
function lowestPersonPart(options: DecodeOptions): number {
  const people = options.classIds.filter((c) => options.personClassIds?.has(c));
  if (people.length === 0) return 1;
  const floor = Math.min(...people.map((c) => options.floors?.[c] ?? options.scoreThreshold));
  return 1 - (1 - floor) ** (1 / people.length);
}

/**
 * Decodes one image of a YOLOX output `[N, 5+C]` (row-major, from `offset`)
 * into candidates in model-input pixels. Grid decoding as in YOLOX
 * `YOLOXHead.decode_outputs` / `demo_postprocess`: for anchor (gx, gy) of
 * stride s, `xy = (p_xy + g_xy)·s`, `wh = exp(p_wh)·s`; score = objectness × class score.
 *
 * @param decoded - true when the export already decoded the grid (`--decode_in_inference`).
 */
export function decodeYolox(
  data: Float32Array,
  offset: number,
  inputWidth: number,
  inputHeight: number,
  classCount: number,
  options: DecodeOptions & { decoded?: boolean },
): Candidate[] {
  const row = 5 + classCount;
  const out: Candidate[] = [];
  const floor = lowestFloor(options);
  let n = 0;
  for (const stride of YOLO_STRIDES) {
    const gw = Math.floor(inputWidth / stride);
    const gh = Math.floor(inputHeight / stride);
    for (let gy = 0; gy < gh; gy++) {
      for (let gx = 0; gx < gw; gx++, n++) {
        const base = offset + n * row;
        const objectness = data[base + 4]!;
        if (objectness < floor) continue;
        const scored = scoreCell((c) => data[base + 5 + c]!, options, objectness);
        if (!scored) continue;
        let cx = data[base]!;
        let cy = data[base + 1]!;
        let w = data[base + 2]!;
        let h = data[base + 3]!;
        if (!options.decoded) {
          cx = (cx + gx) * stride;
          cy = (cy + gy) * stride;
          w = Math.exp(w) * stride;
          h = Math.exp(h) * stride;
        }
        out.push({ box: [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], ...scored });
      }
    }
  }
  return out;
}
