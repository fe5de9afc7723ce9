/** The body of `GET /api/v1/status`. */
import type { Alarm } from '../alarms/index.ts';
import type { CameraStatus } from '../capture/index.ts';
import type { UploaderStatus } from '../upload/index.ts';

export interface EdgeStatus {
  edge_id: string;
  organization_id: string;
  /** ISO 8601. */
  now: string;
  recording: {
    match_id: string | null;
    /** ISO 8601 start of the current recording. */
    since: string | null;
    panorama_segments: number;
    stitch_failures: number;
    /** Camera segments uploaded raw although camera uploads are off: no panorama holds them (`MatchRecorder.counters`). */
    raw_segments_kept: number;
    /** Slots waiting for or in the stitcher now (alarm `stitch_behind` at 3). */
    stitch_queue_slots: number;
  };
  cameras: CameraStatus[];
  spool: {
    backlog_count: number;
    backlog_bytes: number;
    disk_free_bytes: number;
    disk_ok: boolean;
  };
  upload: UploaderStatus;
  schedule: Array<{ match_id: string; kickoff: string; recording_from: string; recording_until: string }>;
  alarms: Alarm[];
}
