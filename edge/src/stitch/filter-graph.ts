/**
 * The ffmpeg command line that stitches one segment: each camera's decoded
 * 4:2:0 planes are split (`extractplanes`), warped with `remap` (luma with the
 * full maps, chroma with the half-size maps; map-files.ts), merged back
 * (`mergeplanes`) and blended into the panorama with its mask as alpha
 * (`alphamerge` + `overlay` in 4:2:0; masks: remap-maps.ts); the result is
 * encoded as 4:2:0 H.264. The older graph (`chromaLayout: '444'`) converts
 * every camera to yuv444p and warps all three planes at full size: about
 * twice the per-pixel work.
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
  /**
   * `420`: warp the cameras' Y, U and V planes as they are decoded (chroma with the half-size maps),
   * blend in 4:2:0; `444`: convert every camera to yuv444p first (the older, dearer graph). @defaultValue '420'
   */
  chromaLayout?: '420' | '444';
}

/**
 * RGB gains as operations on limited-range BT.601 4:2:0: with `R = Y + 1.402 Cr`,
 * `B = Y + 1.772 Cb`, gains (gR, gG, gB) give `Y' ≈ gY·Y` (gY the luma-weighted gain;
 * the Cb/Cr terms of Y' are ≤ 0.2·|gB − gG| and dropped), `Cb' = gB·Cb + Y·(gB − gY)/1.772`,
 * `Cr' = gR·Cr + Y·(gR − gY)/1.402`: `lutyuv` scales each plane, `colorcorrect` adds the
 * luma-proportional chroma shift (its `bl`/`bh`: shift at black/white, 8-bit full scale).
 */
export function yuvGainFilters(gains: readonly [number, number, number]): string[] {
  const [gr, gg, gb] = gains;
  const gy = 0.299 * gr + 0.587 * gg + 0.114 * gb;
  const f = (v: number) => v.toFixed(5);
  // Shift per unit of limited-range luma, as a fraction of 255, pinned to 0 at Y = 16.
  const shift = (c: number) => {
    const bd = (224 / 219) * c;
    const bl = (-bd * 16) / 255;
    // + half a level: colorcorrect truncates its result to an integer.
    return { bl: bl + 0.5 / 255, bh: bl + bd + 0.5 / 255 };
  };
  const cb = shift((gb - gy) / 1.772);
  const cr = shift((gr - gy) / 1.402);
  return [
    // + 0.5: lutyuv truncates too.
    `lutyuv=y='(val-16)*${f(gy)}+16.5':u='(val-128)*${f(gb)}+128.5':v='(val-128)*${f(gr)}+128.5'`,
    `colorcorrect=bl=${f(cb.bl)}:bh=${f(cb.bh)}:rl=${f(cr.bl)}:rh=${f(cr.bh)}`,
  ];
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
  const planar = (encoding.chromaLayout ?? '420') === '420';
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
    const withGains = gains?.some((g) => Math.abs(g - 1) > 0.005) ?? false;
    if (planar) {
      pre.push('format=yuv420p');
      if (gains && withGains) pre.push(...yuvGainFilters(gains));
      const xc = image(p.maps.xmapChromaPath);
      const yc = image(p.maps.ymapChromaPath);
      chains.push(
        `[${k}:v]${pre.join(',')},extractplanes=y+u+v[y${k}][u${k}][v${k}]`,
        `[${xc}:v]split[xu${k}][xv${k}]`,
        `[${yc}:v]split[yu${k}][yv${k}]`,
        `[y${k}][${x}:v][${y}:v]remap=fill=0x101010[ry${k}]`,
        `[u${k}][xu${k}][yu${k}]remap=fill=0x808080[ru${k}]`,
        `[v${k}][xv${k}][yv${k}]remap=fill=0x808080[rv${k}]`,
        `[ry${k}][ru${k}][rv${k}]mergeplanes=0x001020:yuv420p[w${k}]`,
      );
    } else {
      if (gains && withGains) {
        const [r, g, b] = gains.map((v) => v.toFixed(4));
        pre.push('format=gbrp', `colorchannelmixer=rr=${r}:gg=${g}:bb=${b}`);
      }
      pre.push('format=yuv444p');
      chains.push(`[${k}:v]${pre.join(',')}[c${k}]`, `[c${k}][${x}:v][${y}:v]remap=fill=black[w${k}]`);
    }
    if (k === 0) {
      chains.push(`[w${k}]pad=${panorama.widthPx}:${panorama.heightPx}:${box.x}:${box.y}:black[a${k}]`);
    } else {
      const m = image(p.maps.maskPath);
      chains.push(
        `[${m}:v]format=gray[g${k}]`,
        `[w${k}][g${k}]alphamerge[wa${k}]`,
        `[${acc}][wa${k}]overlay=x=${box.x}:y=${box.y}:format=${planar ? 'yuv420' : 'yuv444'}:eof_action=repeat[a${k}]`,
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
