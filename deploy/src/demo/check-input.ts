import { ffprobe, PolyvisionError } from '@polyvision/shared';

/** A camera file is called truncated when fewer than this share of the frames its container lists are in it. */
const MIN_FRAMES_PRESENT = 0.9;

/**
 * Checks one of the user's camera files before the demo starts anything (`--cameras`): ffprobe reads
 * it (packets counted, not decoded), it has a video stream with a size, and the frames its container
 * lists (`nb_frames`, where the container has it: MP4, MOV) are in the file — an MP4 whose index
 * was written first and whose data was cut (an unfinished copy, an interrupted recording) probes
 * fine but holds a few frames of the many it announces.
 *
 * @returns the video's size and the frames present.
 * @throws PolyvisionError `demo_input_unreadable` (not retriable) naming the file and what is wrong:
 *   not a media file ffprobe can read (with ffprobe's message), no video stream (the streams it has),
 *   truncated (frames listed and present). `probe_timeout`, `ffprobe_not_found`, the abort reason.
 */
export async function checkCameraFile(
  path: string,
  signal?: AbortSignal,
): Promise<{ widthPx: number; heightPx: number; frames: number | undefined }> {
  let probe: Awaited<ReturnType<typeof ffprobe>>;
  try {
    probe = await ffprobe(path, signal ? { signal } : {});
  } catch (error) {
    signal?.throwIfAborted();
    if (error instanceof PolyvisionError && error.code === 'probe_failed') {
      throw new PolyvisionError(
        'demo_input_unreadable',
        `--cameras: ${path} is not a readable video: ${error.message}`,
        {
          cause: error,
        },
      );
    }
    throw error;
  }
  const video = probe.video;
  if (!video?.width || !video.height) {
    const kinds = probe.streams.map((s) => s.codec_type ?? 'unknown');
    throw new PolyvisionError(
      'demo_input_unreadable',
      `--cameras: ${path} has no video stream (${kinds.length > 0 ? `streams: ${kinds.join(', ')}` : 'no streams'})`,
    );
  }
  const listed = video.nb_frames;
  const present = video.packetCount;
  if (listed !== undefined && present !== undefined && listed > 0 && present < MIN_FRAMES_PRESENT * listed) {
    throw new PolyvisionError(
      'demo_input_unreadable',
      `--cameras: ${path} is truncated: its container lists ${listed} frames, ${present} are in the file (an unfinished copy or an interrupted recording?)`,
    );
  }
  return { widthPx: video.width, heightPx: video.height, frames: present ?? listed };
}
