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
  out.fill(pad, outOffset, outOffset + 3 * plane);
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
    for (let y = 0; y < rh; y++) {
      const fy = Math.min(Math.max((y + 0.5) * sy - 0.5, 0), region.height - 1);
      const y0 = Math.floor(fy);
      const wy = fy - y0;
      const ra = (region.y + y0) * stride;
      const rb = (region.y + Math.min(y0 + 1, region.height - 1)) * stride;
      let o = (y + padY) * W + padX;
      for (let x = 0; x < rw; x++, o++) {
        const a = ra + xa[x]!;
        const b = ra + xb[x]!;
        const c = rb + xa[x]!;
        const d = rb + xb[x]!;
        const wx = xw[x]!;
        const w00 = (1 - wx) * (1 - wy);
        const w01 = wx * (1 - wy);
        const w10 = (1 - wx) * wy;
        const w11 = wx * wy;
        out[p0 + o] = (src[a]! * w00 + src[b]! * w01 + src[c]! * w10 + src[d]! * w11) * vs;
        out[p1 + o] = (src[a + 1]! * w00 + src[b + 1]! * w01 + src[c + 1]! * w10 + src[d + 1]! * w11) * vs;
        out[p2 + o] = (src[a + 2]! * w00 + src[b + 2]! * w01 + src[c + 2]! * w10 + src[d + 2]! * w11) * vs;
      }
    }
  }
  return { scale: rw / region.width, padX, padY, regionX: region.x, regionY: region.y };
}
