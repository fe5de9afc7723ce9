import { type ReportData, teamsOf } from './report-data.ts';
import type { DemoResult } from './run-demo.ts';

/** One thing the user should look at before trusting the analysis. */
export interface ReportCheck {
  level: 'error' | 'warning';
  /** Stable id (tests, styling). */
  id: string;
  message: string;
}

const pct = (v: number) => `${(v * 100).toFixed(0)} %`;
/** Fewer people tracked per analysed frame than this, on average, and the analysis describes next to nobody. */
const MIN_TRACKED_PER_FRAME = 1;

/**
 * The "check this" list: signs that the analysis is wrong or weaker than it
 * looks. Thresholds are deliberately coarse (they flag, they do not grade):
 * - the job failed (and which stage, why), or completed without some of its segments;
 * - no person tracked in any analysed frame, or under one a frame on average (an error: the job completed, but
 *   describes nothing or next to nothing — a football detector on other footage leaves a few short tracks);
 * - tracked people per frame under half the confident (score ≥ 0.5) people detections;
 * - no ball track (the camera follows the players' centre), or one that leaves the play (not followed there);
 * - a median people score under 0.3 (the detector is unsure of most boxes);
 * - the crop window under 60 % on the pitch, or most people off the pitch;
 * - an output upscaled beyond the limit; the detector's own warnings;
 * - teams unbalanced (the analyze stage's players per frame; without them, track ids more than 3 apart);
 *   analytics in pixels (no calibration: no speeds in m/s, no sprints).
 */
export function reportChecks(result: DemoResult, data: ReportData): ReportCheck[] {
  const checks: ReportCheck[] = [];
  const add = (level: ReportCheck['level'], id: string, message: string) => checks.push({ level, id, message });
  if (result.failure)
    add('error', 'job-failed', `The job did not complete: ${result.failure.reason}. Below is what exists.`);
  const jobError = result.job.error as { code?: string; message?: string } | null | undefined;
  if (!result.failure && jobError?.code === 'segments_failed') {
    add('warning', 'segments-failed', `Completed without some of its segments: ${jobError.message}.`);
  }
  const o = result.outputs;
  if (!o.detections) add('error', 'no-detections', 'No detections file: nothing below describes the footage.');
  if (o.detections && !o.tracks) add('error', 'no-tracks', 'No tracks file.');
  const frames = data.perFrame.length || 1;
  const confident = data.perFrame.reduce((s, f) => s + f.confident, 0) / frames;
  const tracked = data.perFrame.reduce((s, f) => s + f.tracked, 0) / frames;
  if (o.tracks && data.perFrame.length > 0 && tracked < MIN_TRACKED_PER_FRAME) {
    const what =
      tracked === 0
        ? `No person was tracked in any of the ${data.perFrame.length} analysed frames`
        : `Almost nobody was tracked: ${tracked.toFixed(2)} people per analysed frame over ${data.perFrame.length} frames`;
    add(
      'error',
      'nobody-tracked',
      `${what} (${confident.toFixed(1)} confident person detections per frame): the virtual camera, the analytics and the figures below describe ${tracked === 0 ? 'nothing' : 'next to nothing'}. Likely a detector made for other footage (the default one knows football filmed from elevated stadium cameras; give another with --model and --model-layout, e.g. ../shared/models/yolox_nano.onnx with yolox), a class map without a person class, or footage without people.`,
    );
  } else if (o.tracks && confident > 0 && tracked < 0.5 * confident) {
    add(
      'warning',
      'tracks-below-detections',
      `Tracks far fewer than detections: ${tracked.toFixed(1)} people tracked per analysed frame for ${confident.toFixed(1)} confident detections (score ≥ 0.5).`,
    );
  }
  if (o.tracks && data.ballTrackFrames === 0 && data.cameraPath?.ballSource !== 'ball-track') {
    add('warning', 'no-ball', 'No ball track: the virtual camera follows the players’ centre of play, not the ball.');
  }
  if (data.medianPeopleScore !== null && data.medianPeopleScore < 0.3) {
    add(
      'warning',
      'low-scores',
      `Low detection scores: the median person score is ${data.medianPeopleScore.toFixed(2)}; many boxes may be wrong or missed.`,
    );
  }
  const q = data.cameraPath?.quality;
  if (q?.cropOnPitchShare != null && q.cropOnPitchShare < 0.6) {
    add(
      'warning',
      'crop-off-pitch',
      `The virtual camera shows the pitch in only ${pct(q.cropOnPitchShare)} of its picture.`,
    );
  }
  const outOfPlay = data.cameraPath?.follow?.ballOutOfPlayFrames ?? 0;
  if (outOfPlay > 0 && q?.framesWithBall) {
    add(
      'warning',
      'ball-out-of-play',
      `The ball track was outside the players' window in ${outOfPlay} of ${q.framesWithBall} frames: the virtual camera followed the players there, not the track (a ball track that leaves the play is often a false ball: a sock, a line mark).`,
    );
  } else if (q?.ballInCropShare != null && q.ballInCropShare < 0.9) {
    add(
      'warning',
      'ball-out-of-crop',
      `The ball is inside the virtual camera in only ${pct(q.ballInCropShare)} of the frames where it is known.`,
    );
  }
  const people = data.cameraPath?.people;
  if (people && people.total > 0 && people.onPitch < 0.5 * people.total) {
    add(
      'warning',
      'people-off-pitch',
      `Only ${pct(people.onPitch / people.total)} of tracked people stand on the pitch region (${data.cameraPath?.pitch?.source ?? 'unknown'}).`,
    );
  }
  if (data.cameraPath?.output?.warning) add('warning', 'upscaled', data.cameraPath.output.warning);
  for (const w of data.detectionWarnings) add('warning', 'detector', `Detector: ${w}`);
  const teams = teamsOf(data.analytics);
  if (teams.A?.playersPerFrame !== undefined && teams.B?.playersPerFrame !== undefined) {
    // The analyze stage's sizes: players per frame (a track id count grows with every broken track).
    if (data.analytics?.teams?.balanced === false)
      add(
        'warning',
        'teams-unbalanced',
        `Teams are unbalanced: ${teams.A.playersPerFrame} v ${teams.B.playersPerFrame} players per frame (11 v 11 on a full pitch when every player is seen).`,
      );
  } else if (teams.A?.players && teams.B?.players) {
    const a = teams.A.players.length;
    const b = teams.B.players.length;
    if (Math.abs(a - b) > 3)
      add(
        'warning',
        'teams-unbalanced',
        `Teams are unbalanced: ${a} v ${b} players (11 v 11 expected on a full pitch).`,
      );
  }
  if (data.analytics?.unit === 'px') {
    add(
      'warning',
      'pixels',
      'No venue calibration: positions and distances are in image pixels; no speeds in m/s and no sprint counts.',
    );
  }
  return checks;
}
