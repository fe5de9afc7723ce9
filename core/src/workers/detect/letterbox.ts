import type { Region } from './geometry.ts';

/** How a model wants its input tensor (NCHW float32). */
export interface InputSpec {
  inputWidth: number;
  inputHeight: number;
  /** Channel order of the tensor's planes. YOLOX: 'bgr'; Ultralytics YOLOv8/11: 'rgb'. */
  channelOrder: 'bgr' | 'rgb';
  /** Multiplier applied to 0–255 values. YOLOX: 1; Ultralytics: 1/255. */
  valueScale: number;
  /** Padding value on the 0–255 scale (114 in both YOLOX and Ultralytics). */
  padValue: number;
  /** Where the resized image sits. YOLOX: 'top-left'; Ultralytics: 'center'. */
  placement: 'top-left' | 'center';
}

/** Maps model-input pixels back to frame pixels: `x = (mx - padX) / scale + regionX`. */
export interface LetterboxTransform {
  scale: number;
  padX: number;
  padY: number;
  regionX: number;
  regionY: number;
}

/** A packed 3-byte-per-pixel BGR image. */
export interface BgrImage {
  width: number;
  height: number;
  data: Uint8Array;
}

/** The scale that fits `region` inside the model input, keeping the aspect ratio. */
export function letterboxScale(regionWidth: number, regionHeight: number, spec: InputSpec): number {
  return Math.min(spec.inputWidth / regionWidth, spec.inputHeight / regionHeight);
}

/**
 * Letterboxes `region` of a BGR image into one NCHW slot of `out`
 * (`3 × inputHeight × inputWidth` floats from `outOffset`): resized with
 * bilinear interpolation (pixel centres aligned, as OpenCV's INTER_LINEAR)
 * keeping the aspect ratio, padded with `padValue`, channels reordered and
 * scaled. When the region already has the resized size, pixels are copied.
 * `scale` (default: the largest that fits `spec`, {@link letterboxScale}) may be given smaller:
 * the detector passes its nominal input's scale, so that a fitted input (the picture rounded up to
 * 32 px, a little larger than it) shows the tile at the same scale, padded.
 *
 * @returns the transform that maps model-input coordinates back to the image.
 */
export function letterboxInto(
  image: BgrImage,
  region: Region,
  spec: InputSpec,
  out: Float32Array,
  outOffset: number,
  scale: number = letterboxScale(region.width, region.height, spec),
): LetterboxTransform {
  const { inputWidth: W, inputHeight: H } = spec;
  const rw = Math.min(W, Math.round(region.width * scale));
  const rh = Math.min(H, Math.round(region.height * scale));
  const padX = spec.placement === 'center' ? Math.floor((W - rw) / 2) : 0;
  const padY = spec.placement === 'center' ? Math.floor((H - rh) / 2) : 0;
  const plane = W * H;
  const pad = spec.padValue * spec.valueScale;
  // Padding only where the picture will not be written: the rows above and below it, the columns
  // beside it (each float of the tensor is written once).
  for (let c = 0; c < 3; c++) {
    const start = outOffset + c * plane;
    out.fill(pad, start, start + padY * W);
    out.fill(pad, start + (padY + rh) * W, start + plane);
    if (rw < W)
      for (let y = padY; y < padY + rh; y++) {
        out.fill(pad, start + y * W, start + y * W + padX);
        out.fill(pad, start + y * W + padX + rw, start + (y + 1) * W);
      }
  }
  // Plane index of the B, G and R source bytes.
  const planeOf = spec.channelOrder === 'bgr' ? [0, 1, 2] : [2, 1, 0];
  const p0 = outOffset + planeOf[0]! * plane;
  const p1 = outOffset + planeOf[1]! * plane;
  const p2 = outOffset + planeOf[2]! * plane;
  const vs = spec.valueScale;
  const src = image.data;
  const stride = image.width * 3;
  if (rw === region.width && rh === region.height) {
    for (let y = 0; y < rh; y++) {
      let s = (region.y + y) * stride + region.x * 3;
      let o = (y + padY) * W + padX;
      for (let x = 0; x < rw; x++, s += 3, o++) {
        out[p0 + o] = src[s]! * vs;
        out[p1 + o] = src[s + 1]! * vs;
        out[p2 + o] = src[s + 2]! * vs;
      }
    }
  } else {
    const sx = region.width / rw;
    const sy = region.height / rh;
    const xa = new Int32Array(rw);
    const xb = new Int32Array(rw);
    const xw = new Float32Array(rw);
    for (let x = 0; x < rw; x++) {
      const fx = Math.min(Math.max((x + 0.5) * sx - 0.5, 0), region.width - 1);
      const x0 = Math.floor(fx);
      xa[x] = (region.x + x0) * 3;
      xb[x] = (region.x + Math.min(x0 + 1, region.width - 1)) * 3;
      xw[x] = fx - x0;
    }
    // Separable: each source row needed is interpolated horizontally once (into three planar rows,
    // values already scaled), and every output row blends two such rows — the same bilinear weights
    // as one 2×2 blend per pixel, with a fraction of the arithmetic when upscaling (a source row
    // serves several output rows) and sequential loops per plane.
    let rowA = new Float32Array(3 * rw);
    let rowB = new Float32Array(3 * rw);
    let rowAY = -1;
    let rowBY = -1;
    const horizontal = (sourceRow: number, into: Float32Array) => {
      const base = (region.y + sourceRow) * stride;
      for (let x = 0; x < rw; x++) {
        const a = base + xa[x]!;
        const b = base + xb[x]!;
        const wx = xw[x]!;
        into[x] = (src[a]! + (src[b]! - src[a]!) * wx) * vs;
        into[rw + x] = (src[a + 1]! + (src[b + 1]! - src[a + 1]!) * wx) * vs;
        into[2 * rw + x] = (src[a + 2]! + (src[b + 2]! - src[a + 2]!) * wx) * vs;
      }
    };
    const planes = [p0, p1, p2];
    for (let y = 0; y < rh; y++) {
      const fy = Math.min(Math.max((y + 0.5) * sy - 0.5, 0), region.height - 1);
      const y0 = Math.floor(fy);
      const y1 = Math.min(y0 + 1, region.height - 1);
      const wy = fy - y0;
      if (rowAY !== y0) {
        if (rowBY === y0) {
          [rowA, rowB] = [rowB, rowA];
          [rowAY, rowBY] = [rowBY, rowAY];
        } else {
          horizontal(y0, rowA);
          rowAY = y0;
        }
      }
      if (rowBY !== y1) {
        horizontal(y1, rowB);
        rowBY = y1;
      }
      const o = (y + padY) * W + padX;
      for (let c = 0; c < 3; c++) {
        const target = planes[c]! + o;
        const from = c * rw;
        for (let x = 0; x < rw; x++) {
          const a = rowA[from + x]!;
          out[target + x] = a + (rowB[from + x]! - a) * wy;
        }
      }
    }
  }
  return { scale: rw / region.width, padX, padY, regionX: region.x, regionY: region.y };
}
