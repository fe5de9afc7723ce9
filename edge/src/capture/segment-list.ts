/**
 * ffmpeg's segment list (`-segment_list … -segment_list_type csv`): one line
 * `file name,start time,end time` appended when a segment is COMPLETE
 * (closed with its trailer). A file not in the list is the open segment.
 */

/** A completed segment as the list reports it. */
export interface ListedSegment {
  fileName: string;
  startS: number;
  endS: number;
}

/** Parses the CSV list; ignores a last line without its newline (still being written). */
export function parseSegmentList(text: string): ListedSegment[] {
  const out: ListedSegment[] = [];
  const lines = text.split('\n');
  lines.pop(); // after the last newline: empty, or a partial line
  for (const line of lines) {
    const m = /^"?(.*?)"?,([0-9.]+),([0-9.]+)\s*$/.exec(line);
    if (!m) continue;
    out.push({ fileName: m[1] as string, startS: Number(m[2]), endS: Number(m[3]) });
  }
  return out;
}
