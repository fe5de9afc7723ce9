import type { Candidate } from '../nms.ts';
import { YOLO_STRIDES } from './layout.ts';

/** What to keep while decoding one image's raw output. */
export interface DecodeOptions {
  /** Model classes of interest (others are ignored); the best of these is the box's class. */
  classIds: readonly number[];
  /** Minimum score (class score, × objectness for YOLOX). */
  scoreThreshold: number;
}

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
  for (let n = 0; n < N; n++) {
    let best = -1;
    let bestScore = options.scoreThreshold;
    for (const c of options.classIds) {
      const s = data[offset + (4 + c) * N + n]!;
      if (s >= bestScore) {
        bestScore = s;
        best = c;
      }
    }
    if (best < 0) continue;
    const cx = data[offset + n]!;
    const cy = data[offset + N + n]!;
    const w = data[offset + 2 * N + n]!;
    const h = data[offset + 3 * N + n]!;
    out.push({ box: [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], score: bestScore, classId: best });
  }
  return out;
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
  let n = 0;
  for (const stride of YOLO_STRIDES) {
    const gw = Math.floor(inputWidth / stride);
    const gh = Math.floor(inputHeight / stride);
    for (let gy = 0; gy < gh; gy++) {
      for (let gx = 0; gx < gw; gx++, n++) {
        const base = offset + n * row;
        const objectness = data[base + 4]!;
        if (objectness < options.scoreThreshold) continue;
        let best = -1;
        let bestScore = options.scoreThreshold;
        for (const c of options.classIds) {
          const s = objectness * data[base + 5 + c]!;
          if (s >= bestScore) {
            bestScore = s;
            best = c;
          }
        }
        if (best < 0) continue;
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
        out.push({ box: [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], score: bestScore, classId: best });
      }
    }
  }
  return out;
}
