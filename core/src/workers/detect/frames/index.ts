/**
 * Video in: ffprobe metadata and ffmpeg decoding to raw frames, with clear
 * errors for files that are not videos, corrupt, truncated or too short;
 * ffmpeg children die with their owner (`@polyvision/shared` process helpers).
 * Used by every analysis stage.
 */
export * from './probe-video.ts';
export * from './read-frames.ts';
export * from './read-frames-at.ts';
