/**
 * The ffmpeg command line that stitches one segment: each camera is
 * converted to yuv444p (remap keeps every plane at full size, so the maps
 * apply to chroma too), warped with `remap` (maps from map-files.ts), and
 * folded into the panorama with `maskedmerge` (masks: remap-maps.ts);
 * the result is encoded as 4:2:0 H.264.
 */
import type { H264Encoder } from '@polyvision/shared';
import type { CameraMapFiles } from './map-files.ts';

/** One camera's input for a segment; `null` when that camera has no segment (it is left out). */
export type StitchInput = { cameraId: string; path: string } | null;

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
 * @param maps - per camera, in venue order (the blend order the masks were made for).
 * @param inputs - per camera, same order; a missing camera is skipped: the
 *   cameras after it keep their masks, the area only it saw stays black.
 * @throws Error when no camera has an input (nothing to stitch).
 */
export function stitchArgs(
  maps: readonly CameraMapFiles[],
  inputs: readonly StitchInput[],
  output: string,
  encoding: PanoramaEncoding,
): string[] {
  const present = maps.flatMap((m, i) => {
    const input = inputs[i];
    return input ? [{ maps: m, path: input.path }] : [];
  });
  if (present.length === 0) throw new Error('no camera segment to stitch');
  const args = ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y'];
  for (const p of present) args.push('-i', p.path);
  const chains: string[] = [];
  let next = present.length;
  let acc = '';
  present.forEach((p, k) => {
    const x = next++;
    const y = next++;
    args.push('-i', p.maps.xmapPath, '-i', p.maps.ymapPath);
    chains.push(`[${k}:v]format=yuv444p[c${k}]`, `[c${k}][${x}:v][${y}:v]remap=fill=black[w${k}]`);
    if (k === 0) {
      acc = `w${k}`;
      return;
    }
    const m = next++;
    args.push('-i', p.maps.maskPath);
    chains.push(`[${m}:v]format=gray,mergeplanes=format=yuv444p[m${k}]`, `[${acc}][w${k}][m${k}]maskedmerge[a${k}]`);
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
