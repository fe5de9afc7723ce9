/**
 * The encode stage: H.264 renditions (1080p/720p/480p) in one ffmpeg pass,
 * an HLS VOD presentation (master + media playlists, aligned segments) and a
 * poster image; NVENC where it encodes, libx264 otherwise.
 */
export * from './encode-hls.ts';
export * from './match-hls.ts';
