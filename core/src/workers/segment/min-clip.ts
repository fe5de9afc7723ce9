/**
 * Shortest panorama a stage takes when its task is a segment of a match job
 * (`task.segment`, issue #18), in milliseconds: any clip with a frame. The
 * edge's last segment ends with the recording window, anywhere in its
 * wall-clock slot (a 5-minute match of 4 s slots ended 360 ms into its 76th
 * slot), so a 1 s floor (`clip_too_short`, not retriable, the whole-file
 * default) failed the match on its last segment.
 */
export const SEGMENT_MIN_CLIP_MS = 1;
