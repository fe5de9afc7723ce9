/**
 * One camera's recorder: one ffmpeg process that copies the camera's video
 * into MP4 segments cut on wall-clock boundaries, supervised and restarted
 * with backoff when it fails.
 *
 * Time alignment (the policy every camera follows, so that segment k of all
 * cameras shows the same moment):
 * - segments are cut at UTC multiples of `segmentDurationS`
 *   (`-segment_atclocktime`), at the first keyframe after the boundary
 *   (stream copy cannot cut elsewhere), so cameras agree to within one GOP;
 * - files are numbered per run (`<run start ms>-<index>.mp4`: ffmpeg never
 *   reuses a name); a segment's start is the file's birth time (ffmpeg
 *   creates it at the cut; run start + stream time where the file system
 *   has no birth time), and the stitcher groups the cameras' segments by
 *   `floor(start s / segmentDurationS)`;
 * - timestamps restart at 0 in every segment (`-reset_timestamps`); the
 *   stitcher pairs frames by timestamp, repeats the last frame of a camera
 *   that delivers fewer frames (duplicate) and never drops frames (the
 *   panorama lasts as long as the longest camera segment).
 *
 * Disk guard: while `canStart()` answers false, the camera is stopped
 * cleanly (SIGTERM: ffmpeg closes and lists the open segment) and stays
 * paused; it restarts once the guard passes again.
 *
 * Crash safety: ffmpeg appends a segment to its CSV list only when it is
 * complete; a crash loses at most the open segment, whose partial file is
 * removed at the next start. On stop, ffmpeg gets SIGTERM and closes the open
 * segment properly, so it is kept.
 */
import { mkdir, readdir, readFile, readlink, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  abortableSleep,
  backoffDelayMs,
  type Logger,
  PolyvisionError,
  resolveFfmpegPath,
  silentLogger,
  spawnChild,
} from '@polyvision/shared';
import type { Alarms } from '../alarms/index.ts';
import { type CameraSource, describeSource, sourceInputArgs } from './camera-source.ts';
import { parseSegmentList } from './segment-list.ts';

/** A completed segment of one camera. */
export interface CameraSegment {
  cameraId: string;
  /** Absolute path of the complete MP4. */
  path: string;
  /** Wall-clock second (Unix epoch) at which the segment started. */
  startEpochS: number;
  /**
   * A number unique among this camera's segments: its start in epoch ms
   * (two segments never start in the same millisecond); a segment
   * re-delivered after a crash (same file, same birth time) keeps it.
   */
  seq: number;
  /** Duration ffmpeg reports, seconds. */
  durationS: number;
}

/** Options of {@link CameraRecorder}. */
export interface CameraRecorderOptions {
  cameraId: string;
  source: CameraSource;
  /** Folder for this camera's open and completed segments (inside the spool's file system). */
  dir: string;
  /** Target segment length, seconds (10–60 in production; shorter in tests). */
  segmentDurationS: number;
  alarms: Alarms;
  /** Called once per completed segment (also for segments recovered at start). Must take ownership of the file. */
  onSegment: (segment: CameraSegment) => Promise<void>;
  /** Consulted before each (re)start; false pauses the camera (disk guard). */
  canStart?: () => Promise<boolean>;
  /** First restart delay ceiling, ms. @defaultValue 1_000 */
  restartBaseDelayMs?: number;
  /** Restart delay cap, ms. @defaultValue 30_000 */
  restartMaxDelayMs?: number;
  /** How often the segment list is read, ms. @defaultValue 250 */
  pollIntervalMs?: number;
  ffmpegPath?: string;
  logger?: Logger;
}

/** What the status API shows for a camera. */
export interface CameraStatus {
  cameraId: string;
  source: string;
  state: 'idle' | 'recording' | 'restarting' | 'paused' | 'ended' | 'stopped';
  restarts: number;
  segments: number;
  lastSegmentAtMs: number | null;
  lastError: string | null;
}

export class CameraRecorder {
  readonly #o: CameraRecorderOptions;
  readonly #logger: Logger;
  readonly #seen = new Set<string>();
  #status: CameraStatus;

  constructor(options: CameraRecorderOptions) {
    this.#o = options;
    this.#logger = (options.logger ?? silentLogger).child({ camera_id: options.cameraId });
    this.#status = {
      cameraId: options.cameraId,
      source: describeSource(options.source),
      state: 'idle',
      restarts: 0,
      segments: 0,
      lastSegmentAtMs: null,
      lastError: null,
    };
  }

  status(): CameraStatus {
    return { ...this.#status };
  }

  /**
   * Records until `signal` aborts (then ffmpeg closes its open segment, which
   * is delivered, and the promise resolves) or a `file` source without loop ends.
   * Never rejects for camera failures: they raise the `camera_down` alarm and
   * are retried with capped exponential backoff.
   */
  async run(signal: AbortSignal): Promise<void> {
    await this.recover();
    let failures = 0;
    while (!signal.aborted) {
      if (this.#o.canStart && !(await this.#o.canStart())) {
        this.#status.state = 'paused';
        await abortableSleep(1_000, signal).catch(() => {});
        continue;
      }
      const started = Date.now();
      const outcome = await this.#runOnce(signal);
      if (signal.aborted) break;
      if (outcome === 'ended') {
        this.#status.state = 'ended';
        this.#logger.info('camera source ended');
        return;
      }
      if (outcome === 'paused') continue;
      if (Date.now() - started > 30_000) failures = 0;
      const delay = Math.max(
        100,
        backoffDelayMs(failures++, {
          baseDelayMs: this.#o.restartBaseDelayMs ?? 1_000,
          maxDelayMs: this.#o.restartMaxDelayMs ?? 30_000,
          factor: 2,
          jitter: 'full',
        }),
      );
      this.#status.state = 'restarting';
      this.#status.restarts++;
      this.#logger.warn({ delay_ms: delay, restarts: this.#status.restarts }, 'camera restarting');
      await abortableSleep(delay, signal).catch(() => {});
    }
    this.#status.state = 'stopped';
  }

  /** One ffmpeg run; resolves 'ended' (clean exit), 'failed', 'stopped' (aborted) or 'paused' (disk guard). */
  async #runOnce(signal: AbortSignal): Promise<'ended' | 'failed' | 'stopped' | 'paused'> {
    const runId = Date.now();
    const listPath = join(this.#o.dir, `list-${runId}.csv`);
    const args = [
      '-hide_banner',
      '-nostdin',
      '-loglevel',
      'error',
      ...sourceInputArgs(this.#o.cameraId, this.#o.source),
      '-map',
      '0:v:0',
      '-an',
      '-c:v',
      'copy',
      '-f',
      'segment',
      '-segment_time',
      String(this.#o.segmentDurationS),
      '-segment_atclocktime',
      '1',
      '-reset_timestamps',
      '1',
      '-segment_format',
      'mp4',
      '-segment_list',
      listPath,
      '-segment_list_type',
      'csv',
      join(this.#o.dir, `${runId}-%06d.mp4`),
    ];
    const child = spawnChild(this.#o.ffmpegPath ?? resolveFfmpegPath(), args, {
      stdout: 'ignore',
      signal,
      killTimeoutMs: 5_000,
    });
    this.#status.state = 'recording';
    this.#logger.info({ pid: child.pid, source: this.#status.source }, 'camera recording');
    let polling = true;
    let pausing = false;
    const poll = (async () => {
      while (polling) {
        await this.#deliver(listPath, child.pid);
        // Disk guard: stop cleanly (the open segment is closed and kept) before the disk is full.
        if (!pausing && this.#o.canStart && !(await this.#o.canStart())) {
          pausing = true;
          this.#logger.warn('pausing the camera: the disk guard refuses new recordings');
          void child.kill();
        }
        await new Promise((r) => setTimeout(r, this.#o.pollIntervalMs ?? 250));
      }
    })();
    let outcome: 'ended' | 'failed' | 'stopped' | 'paused';
    try {
      await child.done;
      outcome = pausing ? 'paused' : 'ended';
    } catch (error) {
      if (signal.aborted) {
        outcome = 'stopped';
      } else if (pausing) {
        outcome = 'paused';
      } else {
        outcome = 'failed';
        const message = error instanceof PolyvisionError ? error.message : String(error);
        this.#status.lastError = message;
        this.#o.alarms.raise(
          'camera_down',
          this.#o.cameraId,
          `camera ${this.#o.cameraId} (${this.#status.source}) stopped: ${message}`,
          { severity: 'critical' },
        );
      }
    }
    polling = false;
    await poll;
    await this.#deliver(listPath, null);
    await this.#removePartials();
    return outcome;
  }

  /**
   * Hands completed segments of a list to `onSegment`, once each.
   *
   * ffmpeg's segment muxer prints a list entry after the segment's trailer
   * but before it closes the file, so the last bytes may still sit in its
   * I/O buffer: an entry is taken only when a later entry exists, ffmpeg has
   * exited (`pid` null), or, on Linux, no descriptor of `pid` points at the
   * file any more (/proc/<pid>/fd).
   */
  async #deliver(listPath: string, pid: number | null | undefined): Promise<void> {
    let text: string;
    try {
      text = await readFile(listPath, 'utf8');
    } catch {
      return;
    }
    const entries = parseSegmentList(text);
    for (const [index, entry] of entries.entries()) {
      if (this.#seen.has(entry.fileName)) continue;
      const m = /^(\d+)-(\d+)\.mp4$/.exec(entry.fileName);
      if (!m) continue;
      const path = join(this.#o.dir, entry.fileName);
      if (index === entries.length - 1 && pid && (await isOpenBy(pid, path))) return;
      this.#seen.add(entry.fileName);
      const info = await stat(path).catch(() => null);
      if (!info || info.size === 0) continue;
      // When the segment started: the file's birth time (ffmpeg creates it at the cut), else run start + stream time.
      const runStartMs = Number(m[1]);
      const startMs = info.birthtimeMs > 0 ? info.birthtimeMs : runStartMs + entry.startS * 1000;
      this.#status.segments++;
      this.#status.lastSegmentAtMs = Date.now();
      this.#o.alarms.clear('camera_down', this.#o.cameraId);
      try {
        await this.#o.onSegment({
          cameraId: this.#o.cameraId,
          path,
          startEpochS: Math.floor(startMs / 1000),
          seq: Math.floor(startMs),
          durationS: entry.endS - entry.startS,
        });
      } catch (error) {
        // Not delivered: the next poll (or the next start) tries again; the file stays listed.
        this.#seen.delete(entry.fileName);
        this.#status.segments--;
        this.#o.alarms.raise(
          'segment_handling_failed',
          entry.fileName,
          `segment ${entry.fileName} of ${this.#o.cameraId} could not be stored: ${(error as Error).message}`,
          { severity: 'critical' },
        );
      }
    }
  }

  /**
   * Delivers completed segments left by an earlier run (a crash, kill -9)
   * and removes partial ones. Called by `run()`; call it alone to salvage a
   * camera folder without recording.
   */
  async recover(): Promise<void> {
    await mkdir(this.#o.dir, { recursive: true });
    for (const name of await readdir(this.#o.dir)) {
      if (name.startsWith('list-') && name.endsWith('.csv')) await this.#deliver(join(this.#o.dir, name), null);
    }
    await this.#removePartials();
  }

  /**
   * Removes MP4 files no list calls complete (the open segment of a run that
   * crashed) and lists whose files are all gone. Only called while no ffmpeg runs.
   */
  async #removePartials(): Promise<void> {
    const listed = new Set<string>();
    const names = await readdir(this.#o.dir);
    for (const name of names) {
      if (!(name.startsWith('list-') && name.endsWith('.csv'))) continue;
      const entries = parseSegmentList(await readFile(join(this.#o.dir, name), 'utf8').catch(() => ''));
      for (const e of entries) listed.add(e.fileName);
      const remaining = entries.filter((e) => names.includes(e.fileName));
      if (remaining.length === 0 && entries.length > 0) await rm(join(this.#o.dir, name), { force: true });
    }
    for (const name of names) {
      if (name.endsWith('.mp4') && !listed.has(name)) {
        await rm(join(this.#o.dir, name), { force: true });
        this.#logger.warn({ file: name }, 'removed the partial segment of an interrupted run');
      }
    }
  }
}

/**
 * Whether process `pid` holds `path` open (Linux: its /proc/<pid>/fd links).
 * Where /proc cannot be read, answers true (the caller then waits for the
 * next list entry or the process's exit, which are certain).
 */
async function isOpenBy(pid: number, path: string): Promise<boolean> {
  let fds: string[];
  try {
    fds = await readdir(`/proc/${pid}/fd`);
  } catch {
    return true;
  }
  for (const fd of fds) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    if (target === path) return true;
  }
  return false;
}
