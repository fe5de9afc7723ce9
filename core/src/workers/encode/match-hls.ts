import { PolyvisionError } from '@polyvision/shared';
import { z } from 'zod';

/**
 * One media segment of a playlist: its URI (relative to the playlist) and duration in seconds;
 * `discontinuity` on the first entry after segments left out of the match (RFC 8216 §4.3.2.3).
 */
export interface PlaylistEntry {
  uri: string;
  durationS: number;
  discontinuity?: boolean;
}

/** What the encode stage carries from segment k to k+1 of a match (kind `encode-carry`): the match playlists so far. */
export const matchHlsCarrySchema = z.object({
  /** `#EXT-X-TARGETDURATION` of the match playlists, seconds (never lowered once published). */
  targetDurationS: z.number().int().positive(),
  renditions: z.array(
    z.object({
      /** Rung name, the folder of its playlist (`720p`). */
      name: z.string().regex(/^[A-Za-z0-9._-]+$/),
      entries: z.array(
        z.object({ uri: z.string().min(1), durationS: z.number().positive(), discontinuity: z.boolean().optional() }),
      ),
    }),
  ),
});
export type MatchHlsCarry = z.output<typeof matchHlsCarrySchema>;

/**
 * The media segments of an HLS media playlist (RFC 8216 §4.3.2.1 `#EXTINF:<duration>,` then the URI).
 *
 * @throws PolyvisionError `encode_failed` (not retriable) when a URI has no `#EXTINF` before it.
 */
export function parseMediaPlaylist(text: string): PlaylistEntry[] {
  const entries: PlaylistEntry[] = [];
  let duration: number | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#EXTINF:')) duration = Number.parseFloat(line.slice('#EXTINF:'.length));
    else if (line && !line.startsWith('#')) {
      if (duration === null || !(duration > 0)) {
        throw new PolyvisionError('encode_failed', `media playlist: ${line} has no #EXTINF duration`);
      }
      entries.push({ uri: line, durationS: duration });
      duration = null;
    }
  }
  return entries;
}

/**
 * A match's media playlist (RFC 8216): `#EXT-X-PLAYLIST-TYPE:EVENT` — segments are only ever
 * appended, so players may start at the beginning while the match is still played (live) — and,
 * once the match's final segment is in, `#EXT-X-ENDLIST`: the playlist is complete and plays as VOD
 * (§4.3.3.5: an EVENT playlist with ENDLIST is a finished presentation; the type tag itself must not change).
 */
export function renderMatchPlaylist(
  entries: readonly PlaylistEntry[],
  targetDurationS: number,
  final: boolean,
): string {
  const lines = [
    '#EXTM3U',
    '#EXT-X-VERSION:3',
    `#EXT-X-TARGETDURATION:${targetDurationS}`,
    '#EXT-X-MEDIA-SEQUENCE:0',
    '#EXT-X-PLAYLIST-TYPE:EVENT',
    '#EXT-X-INDEPENDENT-SEGMENTS',
  ];
  for (const e of entries) {
    // The match clock jumps over segments left out (missing, cancelled, failed): players must not
    // expect continuous timestamps there.
    if (e.discontinuity) lines.push('#EXT-X-DISCONTINUITY');
    lines.push(`#EXTINF:${e.durationS.toFixed(6)},`, e.uri);
  }
  if (final) lines.push('#EXT-X-ENDLIST');
  return `${lines.join('\n')}\n`;
}

/**
 * Appends one match segment's renditions to the match playlists carried so far.
 *
 * @param carried - the previous segment's carry; null for the first segment.
 * @param segment - per rung: its name and its entries with URIs already relative to the match playlist.
 * @param afterGap - segments of the match were left out since the carried ones: the first entry
 *   of this segment is a discontinuity.
 * @returns the new carry (for the next segment) and each rung's playlist text.
 * @throws PolyvisionError `encode_failed` (not retriable) when the rungs differ from the carried ones.
 */
export function appendMatchSegment(
  carried: MatchHlsCarry | null,
  segment: readonly { name: string; entries: readonly PlaylistEntry[] }[],
  final: boolean,
  afterGap = false,
): { carry: MatchHlsCarry; playlists: { name: string; text: string }[] } {
  if (carried) {
    const before = carried.renditions.map((r) => r.name).join(',');
    const now = segment.map((r) => r.name).join(',');
    if (before !== now) {
      throw new PolyvisionError('encode_failed', `match renditions ${before} but this segment encoded ${now}`);
    }
  }
  const longest = Math.max(0, ...segment.flatMap((r) => r.entries.map((e) => e.durationS)));
  const targetDurationS = Math.max(carried?.targetDurationS ?? 1, Math.ceil(longest));
  const renditions = segment.map((r) => ({
    name: r.name,
    entries: [
      ...(carried?.renditions.find((c) => c.name === r.name)?.entries ?? []),
      ...r.entries.map((e, i) => (afterGap && carried && i === 0 ? { ...e, discontinuity: true } : e)),
    ],
  }));
  return {
    carry: { targetDurationS, renditions },
    playlists: renditions.map((r) => ({ name: r.name, text: renderMatchPlaylist(r.entries, targetDurationS, final) })),
  };
}
