import { trackColour } from '../track/draw-tracks.ts';
import type { Track } from '../track/tracks-format.ts';
import type { BallPosition } from './ball-positions.ts';
import type { CameraPath } from './camera-path.ts';
import type { PitchRegion } from './pitch-region.ts';

/** ASS time `H:MM:SS.cc` (centiseconds), the format libass reads. */
export function assTime(seconds: number): string {
  const cs = Math.max(0, Math.round(seconds * 100));
  const h = Math.floor(cs / 360000);
  const m = Math.floor((cs % 360000) / 6000);
  const s = Math.floor((cs % 6000) / 100);
  return `${h}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}.${String(cs % 100).padStart(2, '0')}`;
}

/** ASS colour `&HBBGGRR&` of an RGB triple. */
const assColour = ([r, g, b]: readonly [number, number, number]) =>
  `&H${[b, g, r]
    .map((v) => v.toString(16).padStart(2, '0'))
    .join('')
    .toUpperCase()}&`;

const rect = (x1: number, y1: number, x2: number, y2: number) =>
  `m ${x1.toFixed(1)} ${y1.toFixed(1)} l ${x2.toFixed(1)} ${y1.toFixed(1)} ${x2.toFixed(1)} ${y2.toFixed(1)} ${x1.toFixed(1)} ${y2.toFixed(1)}`;

/**
 * Writes the tracks overlay as an Advanced SubStation Alpha script (ASS v4+,
 * drawn by libass through ffmpeg's `ass` filter): for every analysed frame
 * (shown until the next one), each person's box outlined in its track colour
 * with its id (grey when its foot point is off the pitch, so it does not
 * steer the camera), the ball as a yellow square, the crop window in red,
 * and the pitch outline when one is known. Drawings use ASS's `\p1` vector
 * mode (`m`/`l` commands) with a transparent fill and a coloured border.
 *
 * @param scale - overlay pixels per panorama pixel (the overlay is a downscaled panorama).
 */
export function overlayAss(params: {
  width: number;
  height: number;
  scale: number;
  tracks: readonly Track[];
  fps: number;
  frameCount: number;
  path: CameraPath;
  ball: readonly (BallPosition | undefined)[];
  pitch: PitchRegion;
}): string {
  const { scale: s, fps } = params;
  const fontSize = Math.max(10, Math.round(params.height / 22));
  const lines = [
    '[Script Info]',
    'ScriptType: v4.00+',
    `PlayResX: ${params.width}`,
    `PlayResY: ${params.height}`,
    'ScaledBorderAndShadow: yes',
    'WrapStyle: 2',
    '',
    '[V4+ Styles]',
    'Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding',
    `Style: Default,DejaVu Sans,${fontSize},&H00FFFFFF,&H00FFFFFF,&H00000000,&H80000000,1,0,0,0,100,100,0,0,1,1,0,7,0,0,0,1`,
    '',
    '[Events]',
    'Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text',
  ];
  const box = (layer: number, start: string, end: string, colour: string, border: number, path: string) =>
    `Dialogue: ${layer},${start},${end},Default,,0,0,0,,{\\an7\\pos(0,0)\\1a&HFF&\\bord${border}\\shad0\\3c${colour}\\p1}${path}{\\p0}`;
  const endAll = assTime(params.frameCount / fps);
  if (params.pitch.outline.length > 2) {
    const [p0, ...rest] = params.pitch.outline;
    const outline = `m ${(p0![0] * s).toFixed(1)} ${(p0![1] * s).toFixed(1)} l ${rest.map(([x, y]) => `${(x * s).toFixed(1)} ${(y * s).toFixed(1)}`).join(' ')}`;
    lines.push(box(0, assTime(0), endAll, '&H00FFFF&', 1, outline));
  }
  for (const track of params.tracks) {
    if (track.class === 'ball') continue;
    const colour = assColour(trackColour(track.id));
    for (const f of track.frames) {
      if (f.frame >= params.frameCount) continue;
      const start = assTime(f.frame / fps);
      const end = assTime((f.frame + 1) / fps);
      const [x1, y1, x2, y2] = f.box.map((v) => v * s) as [number, number, number, number];
      const onPitch = params.pitch.contains((f.box[0] + f.box[2]) / 2, f.box[3]);
      const c = onPitch ? colour : '&H909090&';
      lines.push(box(1, start, end, c, 1, rect(x1, y1, x2, y2)));
      lines.push(
        `Dialogue: 2,${start},${end},Default,,0,0,0,,{\\an1\\pos(${x1.toFixed(1)},${(y1 - 1).toFixed(1)})\\1c${c}}${track.id}`,
      );
    }
  }
  params.ball.forEach((b, frame) => {
    if (!b || frame >= params.frameCount) return;
    const r = Math.max(3, 4 * s);
    lines.push(
      box(
        3,
        assTime(frame / fps),
        assTime((frame + 1) / fps),
        '&H00FFFF&',
        2,
        rect(b.x * s - r, b.y * s - r, b.x * s + r, b.y * s + r),
      ),
    );
  });
  params.path.windows.forEach((w, frame) => {
    if (frame >= params.frameCount) return;
    const x1 = (w.cx - w.width / 2) * s;
    const y1 = (w.cy - w.height / 2) * s;
    lines.push(
      box(
        4,
        assTime(frame / fps),
        assTime((frame + 1) / fps),
        '&H0000FF&',
        2,
        rect(x1, y1, x1 + w.width * s, y1 + w.height * s),
      ),
    );
  });
  return `${lines.join('\n')}\n`;
}
