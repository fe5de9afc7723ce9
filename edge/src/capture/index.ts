/**
 * Capture: camera sources (`rtsp`, `file`, `synthetic`) and their ffmpeg
 * inputs, the per-camera `CameraRecorder` (wall-clock aligned MP4 segments,
 * restart with backoff, crash recovery), and the segment list parser.
 */
export * from './camera-recorder.ts';
export * from './camera-source.ts';
export * from './segment-list.ts';
