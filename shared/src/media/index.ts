/**
 * ffmpeg and ffprobe: binary resolution (FFMPEG_PATH/FFPROBE_PATH,
 * ffmpeg-static, PATH), `ffprobe(file)` with counted frames, and the
 * once-per-process H.264 encoder choice (NVENC if it really encodes, else x264).
 */
export * from './ffmpeg-path.ts';
export * from './ffprobe.ts';
export * from './h264-encoder.ts';
