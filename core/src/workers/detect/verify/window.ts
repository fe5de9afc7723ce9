import type { BoxXyxy } from '../geometry.ts';
import type { BgrImage } from '../letterbox.ts';

/** A verifier's view of a box (the model card's `verifier.window`, `ball_verifier.window`). */
export interface VerifierWindowSpec {
  /** Window width in verifier-input pixels (32 for the repository's verifiers). */
  widthPx: number;
  /** Window height in verifier-input pixels (64 for people, 32 for the ball). */
  heightPx: number;
  /** Window height as a multiple of `max(box height, box width × heightPx / widthPx, minExtentPx)` (1.6; 6). */
  context: number;
  /** The least box extent the window is sized from, in frame pixels (1 for people; 6 for the ball: a window ≥ 36 px). */
  minExtentPx: number;
}

/** Grey outside the frame, as the training's `verifier_window.PAD` and the detector's letterbox. */
const PAD = 114;

/**
 * The frame region (x0, y0, x1, y1, frame pixels) a verifier sees for `box`: centred on it,
 * `context × max(box height, box width × heightPx / widthPx, minExtentPx)` tall and `widthPx / heightPx`
 * of that wide — the training's `verifier_window.window` (core/models/player-detector/train/verifier_window.py).
 */
export function verifierWindow(box: BoxXyxy, spec: VerifierWindowSpec): BoxXyxy {
  const cx = (box[0] + box[2]) / 2;
  const cy = (box[1] + box[3]) / 2;
  const tall =
    spec.context * Math.max(box[3] - box[1], ((box[2] - box[0]) * spec.heightPx) / spec.widthPx, spec.minExtentPx);
  const wide = (tall * spec.widthPx) / spec.heightPx;
  return [cx - wide / 2, cy - tall / 2, cx + wide / 2, cy + tall / 2];
}

/**
 * Samples `region` (frame pixels, may reach outside the frame) of a BGR image into one NCHW RGB slot of
 * `out` (`3 × heightPx × widthPx` floats from `offset`, values `round(v) / 255`): bilinear at the output
 * pixel centres — source x = x0 + (i + 0.5)(x1 − x0) / widthPx − 0.5 in pixel-centre coordinates — each
 * neighbour outside the image counting as grey 114. The same arithmetic as the training's
 * `verifier_window.sample` (checked against its numbers in verify/window.test.ts).
 */
export function sampleWindow(
  image: BgrImage,
  region: BoxXyxy,
  spec: VerifierWindowSpec,
  out: Float32Array,
  offset: number,
): void {
  const { widthPx: W, heightPx: H } = spec;
  const [x0, y0, x1, y1] = region;
  const plane = W * H;
  const stride = image.width * 3;
  const src = image.data;
  // Left neighbour and weight of each output column (the same for every row).
  const xa = new Int32Array(W);
  const wx = new Float64Array(W);
  for (let i = 0; i < W; i++) {
    const sx = x0 + ((i + 0.5) * (x1 - x0)) / W - 0.5;
    xa[i] = Math.floor(sx);
    wx[i] = sx - xa[i]!;
  }
  const yTop = Math.floor(y0 + (0.5 * (y1 - y0)) / H - 0.5);
  const yBottom = Math.floor(y0 + ((H - 0.5) * (y1 - y0)) / H - 0.5);
  // Every neighbour inside the image: no bounds checks (most windows).
  const inside = xa[0]! >= 0 && xa[W - 1]! + 1 < image.width && yTop >= 0 && yBottom + 1 < image.height;
  const at = (x: number, y: number, c: number): number =>
    x < 0 || y < 0 || x >= image.width || y >= image.height ? PAD : src[y * stride + x * 3 + c]!;
  for (let j = 0; j < H; j++) {
    const sy = y0 + ((j + 0.5) * (y1 - y0)) / H - 0.5;
    const ya = Math.floor(sy);
    const wy = sy - ya;
    const row = offset + j * W;
    for (let i = 0; i < W; i++) {
      const x = xa[i]!;
      const w = wx[i]!;
      // Products in the training's order ((p · wx) · wy), so rounding to 0–255 agrees to the last bit.
      for (let c = 0; c < 3; c++) {
        let v: number;
        if (inside) {
          const a = ya * stride + x * 3 + c;
          v =
            src[a]! * (1 - w) * (1 - wy) +
            src[a + 3]! * w * (1 - wy) +
            src[a + stride]! * (1 - w) * wy +
            src[a + stride + 3]! * w * wy;
        } else {
          v =
            at(x, ya, c) * (1 - w) * (1 - wy) +
            at(x + 1, ya, c) * w * (1 - wy) +
            at(x, ya + 1, c) * (1 - w) * wy +
            at(x + 1, ya + 1, c) * w * wy;
        }
        // BGR source → RGB planes.
        out[row + (2 - c) * plane + i] = Math.floor(v + 0.5) / 255;
      }
    }
  }
}
