/**
 * The ffmpeg command line that stitches one segment: each camera is
 * converted to yuv444p (remap keeps every plane at full size, so the maps
 * apply to chroma too), warped with `remap` (maps from map-files.ts), and
 * blended into the panorama with its feather mask as alpha (`alphamerge` +
 * `overlay`; masks: remap-maps.ts); the result is encoded as 4:2:0 H.264.
 */
import type { H264Encoder } from '@polyvision/shared';
import type { CameraMapFiles } from './map-files.ts';

/** One camera's input for a segment; `null` when that camera has no segment (it is left out). */
export type StitchInput = { cameraId: string; path: string } | null;

/** Per-camera corrections from the venue calibration, applied before the warp. */
export interface CameraCorrection {
  /** Seconds cut from the start of the camera's video (time alignment). @defaultValue 0 */
  timeOffsetS?: number;
  /** R, G, B gains (exposure and colour balance). @defaultValue [1, 1, 1] */
  colorGains?: readonly [number, number, number];
}

/** Encoder settings for the panorama. */
export interface PanoramaEncoding {
  encoder: H264Encoder;
  /** x264 CRF, or NVENC constant quality (`-cq`). @defaultValue 20 */
  quality?: number;
  /** x264 preset (ignored by NVENC, which uses p4). @defaultValue 'veryfast' */
  preset?: string;
  /** Keyframe interval in frames. @defaultValue 50 */
  gopFrames?: number;
}

/**
 * Builds the ffmpeg arguments for one segment.
 *
 * Each camera is warped only over its box of the panorama (maps cropped by
 * map-files.ts). The first camera is padded to the panorama's size (black
 * where it sees nothing); every further camera gets its blend mask as alpha
 * (`alphamerge`) and is laid over the panorama at its box with `overlay`,
 * whose straight-alpha blend `acc·(1 − m) + Iₖ·m` is exactly the fold of
 * remap-maps.ts.
 *
 * @param maps - per camera, in venue order (the blend order the masks were made for).
 * @param corrections - per camera, same order: time offset (`trim`) and colour
 *   gains (`colorchannelmixer` on planar RGB) applied before the warp.
 * @param inputs - per camera, same order; a missing camera is skipped: the
 *   cameras after it keep their masks, the area only it saw stays black.
 * @param panorama - the panorama's size, pixels.
 * @throws Error when no camera has an input (nothing to stitch).
 */
export function stitchArgs(
  maps: readonly CameraMapFiles[],
  inputs: readonly StitchInput[],
  output: string,
  encoding: PanoramaEncoding,
  panorama: { widthPx: number; heightPx: number },
  corrections: readonly (CameraCorrection | undefined)[] = [],
): string[] {
  const present = maps.flatMap((m, i) => {
    const input = inputs[i];
    return input ? [{ maps: m, path: input.path, correction: corrections[i] ?? {} }] : [];
  });
  if (present.length === 0) throw new Error('no camera segment to stitch');
  const args = ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y'];
  for (const p of present) args.push('-i', p.path);
  const chains: string[] = [];
  let next = present.length;
  let acc = '';
  // Forced demuxer for the maps and masks: probing can mistake their bytes for raw audio.
  const image = (path: string) => {
    args.push('-f', 'pgm_pipe', '-i', path);
    return next++;
  };
  present.forEach((p, k) => {
    const x = image(p.maps.xmapPath);
    const y = image(p.maps.ymapPath);
    const { box } = p.maps;
    const pre: string[] = [];
    const offset = p.correction.timeOffsetS ?? 0;
    if (offset > 0) pre.push(`trim=start=${offset.toFixed(4)}`, 'setpts=PTS-STARTPTS');
    const gains = p.correction.colorGains;
    if (gains?.some((g) => Math.abs(g - 1) > 0.005)) {
      const [r, g, b] = gains.map((v) => v.toFixed(4));
      pre.push('format=gbrp', `colorchannelmixer=rr=${r}:gg=${g}:bb=${b}`);
    }
    pre.push('format=yuv444p');
    chains.push(`[${k}:v]${pre.join(',')}[c${k}]`, `[c${k}][${x}:v][${y}:v]remap=fill=black[w${k}]`);
    if (k === 0) {
      chains.push(`[w${k}]pad=${panorama.widthPx}:${panorama.heightPx}:${box.x}:${box.y}:black[a${k}]`);
    } else {
      const m = image(p.maps.maskPath);
      chains.push(
        `[${m}:v]format=gray[g${k}]`,
        `[w${k}][g${k}]alphamerge[wa${k}]`,
        `[${acc}][wa${k}]overlay=x=${box.x}:y=${box.y}:format=yuv444:eof_action=repeat[a${k}]`,
      );
    }
    acc = `a${k}`;
  });
  chains.push(`[${acc}]format=yuv420p[out]`);
  args.push('-filter_complex', chains.join(';'), '-map', '[out]', '-an');
  const quality = String(encoding.quality ?? 20);
  const gop = String(encoding.gopFrames ?? 50);
  if (encoding.encoder === 'h264_nvenc') {
    args.push('-c:v', 'h264_nvenc', '-preset', 'p4', '-rc', 'vbr', '-cq', quality, '-b:v', '0');
  } else {
    args.push('-c:v', 'libx264', '-preset', encoding.preset ?? 'veryfast', '-crf', quality);
  }
  args.push('-g', gop, '-pix_fmt', 'yuv420p', '-movflags', '+faststart', '-f', 'mp4', output);
  return args;
}
