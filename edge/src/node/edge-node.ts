/**
 * The edge node: everything wired together from the config.
 * - spool (journal + disk guard), the stitcher (maps computed once from the
 *   calibration, after point-based calibration when points are given),
 * - the uploader, always running,
 * - the scheduler: the match tick starts a `MatchRecorder` for the match
 *   whose window is open and stops it when the window closes; heartbeat;
 *   cleanup (disk guard),
 * - the status API with `/metrics`.
 * `close()` stops recording (open segments are closed properly and spooled),
 * stops uploading (in-flight uploads stay resumable), then the API and spool.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createMetricsRegistry,
  getGauge,
  type Logger,
  type Registry,
  type RunningServer,
  serve,
  silentLogger,
} from '@polyvision/shared';
import { Alarms } from '../alarms/index.ts';
import { calibrateVenue } from '../calibration/index.ts';
import type { EdgeConfig } from '../config/index.ts';
import { MatchRecorder } from '../recording/index.ts';
import { recordingWindow, type ScheduledMatch, startScheduler } from '../schedule/index.ts';
import { Spool } from '../spool/index.ts';
import { type EdgeStatus, loadStatusToken, statusApp } from '../status/index.ts';
import { createStitcher, type Stitcher } from '../stitch/index.ts';
import { Uploader, type UploaderOptions } from '../upload/index.ts';

/** Options of {@link EdgeNode.start}. */
export interface EdgeNodeOptions {
  logger?: Logger;
  /** Record this match now, for `durationS` seconds, besides the schedule. */
  recordNow?: { matchId: string; durationS: number };
  /** Upload progress callback (the CLI's progress bar). */
  onUploadProgress?: UploaderOptions['onProgress'];
  /** Serve the status API. @defaultValue true */
  serveStatus?: boolean;
}

interface Recording {
  matchId: string;
  sinceMs: number;
  controller: AbortController;
  recorder: MatchRecorder;
  done: Promise<void>;
}

export class EdgeNode {
  readonly config: EdgeConfig;
  readonly alarms: Alarms;
  readonly spool: Spool;
  readonly stitcher: Stitcher | null;
  readonly uploader: Uploader;
  readonly registry: Registry;
  readonly matches: ScheduledMatch[];
  server: RunningServer | null = null;
  /** Bearer token of the status API (`status.token`, or `<spool.dir>/status-token`); null while it is not served. */
  statusToken: string | null = null;
  readonly #logger: Logger;
  readonly #uploadController = new AbortController();
  #uploading: Promise<void> = Promise.resolve();
  #recording: Recording | null = null;
  #switching: Promise<void> = Promise.resolve();
  #scheduler: { stop(): Promise<void> } | null = null;
  #diskOk = true;
  #diskFreeBytes = 0;
  #lastHeartbeatMs = 0;
  #panoramaSegments = 0;
  #stitchFailures = 0;
  #rawSegmentsKept = 0;
  #closed = false;

  private constructor(
    config: EdgeConfig,
    parts: { alarms: Alarms; spool: Spool; stitcher: Stitcher | null; logger: Logger; matches: ScheduledMatch[] },
    options: EdgeNodeOptions,
  ) {
    this.config = config;
    this.alarms = parts.alarms;
    this.spool = parts.spool;
    this.stitcher = parts.stitcher;
    this.#logger = parts.logger;
    this.matches = parts.matches;
    this.registry = createMetricsRegistry({ service: 'edge', labels: { edge_id: config.edge_id } });
    this.uploader = new Uploader({
      spool: this.spool,
      alarms: this.alarms,
      ingestUrl: config.ingest.url,
      token: config.ingest.token,
      organizationId: config.organization_id,
      chunkSizeBytes: config.ingest.chunk_size_bytes,
      bandwidthBytesPerSecond: config.ingest.bandwidth_bytes_per_s,
      confirmation: config.ingest.confirmation,
      maxDelayMs: config.ingest.max_retry_delay_ms,
      onProgress: options.onUploadProgress,
      logger: this.#logger,
    });
    this.#registerMetrics();
  }

  /**
   * Opens the spool, prepares the stitcher, starts uploading, the scheduler
   * and the status API.
   *
   * @throws ValidationError from the calibration (`stitch_singular_calibration`,
   *   `stitch_calibration_uncovered`, `calibration_*`); PolyvisionError
   *   `spool_journal_unreadable`, `listen_failed`.
   */
  static async start(config: EdgeConfig, options: EdgeNodeOptions = {}): Promise<EdgeNode> {
    const logger = options.logger ?? silentLogger;
    const alarms = new Alarms({ logger });
    const spool = await Spool.open({
      dir: config.spool.dir,
      alarms,
      logger,
      minFreeBytes: config.spool.min_free_bytes,
      maxSpoolBytes: config.spool.max_spool_bytes,
      keepConfirmedMs: config.spool.keep_confirmed_s * 1000,
    });
    let stitcher: Stitcher | null = null;
    try {
      if (config.panorama.enabled && config.calibration) {
        let venue = config.calibration;
        if (config.calibration_points.length > 0) {
          const fitted = calibrateVenue(venue, config.calibration_points);
          venue = fitted.venue;
          for (const fit of fitted.fits) logger.info({ ...fit }, 'camera calibrated from points');
        }
        stitcher = await createStitcher(venue, {
          workDir: join(config.spool.dir, 'maps'),
          encoder: config.panorama.encoder === 'auto' ? undefined : config.panorama.encoder,
          quality: config.panorama.quality,
          preset: config.panorama.preset,
          featherPx: config.panorama.feather_px,
          minPitchCoverage: config.panorama.min_pitch_coverage,
          logger,
          ...(config.panorama.seam_check_interval_s > 0
            ? {
                seamCheck: {
                  intervalS: config.panorama.seam_check_interval_s,
                  alarmPx: config.panorama.seam_alarm_px,
                  alarms,
                },
              }
            : {}),
        });
      }
    } catch (error) {
      spool.close();
      throw error;
    }
    const matches: ScheduledMatch[] = [...config.schedule.matches];
    if (options.recordNow) {
      const startMs = Date.now();
      const endMs = startMs + options.recordNow.durationS * 1000;
      matches.push({
        match_id: options.recordNow.matchId,
        kickoff: new Date(startMs).toISOString(),
        duration_s: Math.max(1, Math.round(options.recordNow.durationS)),
        window: { startMs, endMs },
      });
    }
    const node = new EdgeNode(config, { alarms, spool, stitcher, logger, matches }, options);
    await node.#cleanup();
    await node.#salvage();
    node.#uploading = node.uploader.run(node.#uploadController.signal);
    if (options.serveStatus ?? true) {
      const statusToken = await loadStatusToken(config.status.token, config.spool.dir);
      node.statusToken = statusToken.token;
      node.server = await serve(statusApp(node, node.registry, { token: statusToken.token, logger }), {
        host: config.status.host,
        port: config.status.port,
      });
      logger.info(
        { url: node.server.url, token_source: statusToken.source, token_file: statusToken.path },
        'edge status API listening',
      );
    }
    node.#scheduler = startScheduler({
      matches,
      leadS: config.schedule.lead_s,
      tailS: config.schedule.tail_s,
      heartbeatS: config.schedule.heartbeat_s,
      cleanupCron: config.schedule.cleanup_cron,
      onMatch: (m) => node.#setMatch(m?.match_id ?? null),
      onHeartbeat: () => node.#heartbeat(),
      onCleanup: () => node.#cleanup(),
    });
    return node;
  }

  /** The match being recorded, or null. */
  get recordingMatchId(): string | null {
    return this.#recording?.matchId ?? null;
  }

  #setMatch(matchId: string | null): Promise<void> {
    if (this.#closed || (this.#recording?.matchId ?? null) === matchId) return this.#switching;
    this.#switching = this.#switching.then(async () => {
      if (this.#closed || (this.#recording?.matchId ?? null) === matchId) return;
      await this.#stopRecording(true);
      if (matchId) this.#startRecording(matchId);
    });
    return this.#switching;
  }

  #startRecording(matchId: string): void {
    const controller = new AbortController();
    const recorder = this.#matchRecorder(matchId);
    const done = recorder.run(controller.signal).catch((error) => {
      this.alarms.raise('recording_failed', matchId, `recording ${matchId} failed: ${(error as Error).message}`, {
        severity: 'critical',
      });
    });
    this.#recording = { matchId, sinceMs: Date.now(), controller, recorder, done };
    this.#logger.info({ match_id: matchId }, 'recording started');
  }

  /** Stops the recording; `windowClosed` (not a shutdown) also spools the match's end marker. */
  async #stopRecording(windowClosed = false): Promise<void> {
    const r = this.#recording;
    if (!r) return;
    r.controller.abort();
    await r.done;
    if (windowClosed) {
      // The end marker tells the core the match is over (before `recordingMatchId` reads null).
      await r.recorder.spoolEndMarker().catch((error: unknown) => {
        this.alarms.raise(
          'end_marker_failed',
          r.matchId,
          `spooling the end marker of ${r.matchId} failed (the core closes the match after its idle grace): ${(error as Error).message}`,
        );
      });
    }
    const counters = r.recorder.counters();
    this.#panoramaSegments += counters.stitched;
    this.#stitchFailures += counters.stitchFailures;
    this.#rawSegmentsKept += counters.rawKept;
    this.#recording = null;
    this.#logger.info({ match_id: r.matchId }, 'recording stopped');
  }

  /**
   * After a crash: stitches and spools the completed segments every match
   * folder under `incoming/` still holds (the active match's recorder would
   * do it too, but a match whose window has closed has no recorder).
   */
  async #salvage(): Promise<void> {
    let names: string[] = [];
    try {
      names = await readdir(join(this.spool.dir, 'incoming'));
    } catch {
      return;
    }
    for (const matchId of names) {
      const recorder = this.#matchRecorder(matchId);
      await recorder.recover().catch((error) => {
        this.alarms.raise('salvage_failed', matchId, `salvaging ${matchId} failed: ${(error as Error).message}`, {
          severity: 'critical',
        });
      });
    }
  }

  #matchRecorder(matchId: string): MatchRecorder {
    return new MatchRecorder({
      matchId,
      cameras: this.config.cameras,
      segmentDurationS: this.config.segment_duration_s,
      spool: this.spool,
      alarms: this.alarms,
      stitcher: this.stitcher,
      stitchOrder: this.config.calibration?.cameras
        .map((c) => c.id)
        .filter((id) => this.config.cameras.some((c) => c.id === id)),
      uploadCameraSegments: this.config.ingest.upload_camera_segments,
      canStart: async () => this.#diskOk,
      logger: this.#logger,
    });
  }

  async #cleanup(): Promise<void> {
    try {
      const result = await this.spool.guard();
      this.#diskOk = result.ok;
      this.#diskFreeBytes = result.freeBytes;
    } catch (error) {
      this.alarms.raise('spool_guard_failed', 'disk', `disk guard failed: ${(error as Error).message}`, {
        severity: 'critical',
      });
    }
  }

  async #heartbeat(): Promise<void> {
    this.#lastHeartbeatMs = Date.now();
    const backlog = this.spool.journal.backlog();
    this.#logger.info(
      {
        match_id: this.recordingMatchId,
        backlog_count: backlog.count,
        backlog_bytes: backlog.sizeBytes,
        alarms: this.alarms.list().map((a) => `${a.code}:${a.subject}`),
      },
      'heartbeat',
    );
  }

  /** Ready when the disk guard passes. */
  ready(): boolean {
    return !this.#closed && this.#diskOk;
  }

  /** The status API body. */
  async status(): Promise<EdgeStatus> {
    const backlog = this.spool.journal.backlog();
    const r = this.#recording;
    const counters = r?.recorder.counters();
    let free = this.#diskFreeBytes;
    try {
      free = await this.spool.freeBytes();
    } catch {
      // keep the last known value
    }
    return {
      edge_id: this.config.edge_id,
      organization_id: this.config.organization_id,
      now: new Date().toISOString(),
      recording: {
        match_id: r?.matchId ?? null,
        since: r ? new Date(r.sinceMs).toISOString() : null,
        panorama_segments: this.#panoramaSegments + (counters?.stitched ?? 0),
        stitch_failures: this.#stitchFailures + (counters?.stitchFailures ?? 0),
        raw_segments_kept: this.#rawSegmentsKept + (counters?.rawKept ?? 0),
        stitch_queue_slots: counters?.stitchQueueSlots ?? 0,
      },
      cameras: r?.recorder.cameras() ?? [],
      spool: {
        backlog_count: backlog.count,
        backlog_bytes: backlog.sizeBytes,
        disk_free_bytes: free,
        disk_ok: this.#diskOk,
      },
      upload: this.uploader.status(),
      schedule: this.matches.map((m) => {
        const w = recordingWindow(m, this.config.schedule.lead_s, this.config.schedule.tail_s);
        return {
          match_id: m.match_id,
          kickoff: m.kickoff,
          recording_from: new Date(w.startMs).toISOString(),
          recording_until: new Date(w.endMs).toISOString(),
        };
      }),
      alarms: this.alarms.list(),
    };
  }

  #registerMetrics(): void {
    const gauge = (name: string, help: string, value: () => number) => {
      const g: { set(v: number): void } = getGauge(this.registry, { name, help, collect: () => g.set(value()) });
    };
    gauge(
      'edge_spool_backlog_segments',
      'Segments not yet confirmed by the core',
      () => this.spool.journal.backlog().count,
    );
    gauge(
      'edge_spool_backlog_bytes',
      'Bytes not yet confirmed by the core',
      () => this.spool.journal.backlog().sizeBytes,
    );
    gauge(
      'edge_disk_free_bytes',
      'Free bytes on the spool file system at the last disk check',
      () => this.#diskFreeBytes,
    );
    gauge(
      'edge_upload_bytes',
      'Bytes acknowledged by the ingest since start',
      () => this.uploader.status().bytesUploaded,
    );
    gauge(
      'edge_upload_rate_bytes_per_second',
      'Upload rate over the last 10 s',
      () => this.uploader.status().rateBytesPerSecond,
    );
    gauge(
      'edge_upload_insufficient_storage_responses',
      '507 answers from the ingest since start',
      () => this.uploader.status().insufficientStorageResponses,
    );
    gauge('edge_recording', '1 while a match is being recorded', () => (this.#recording ? 1 : 0));
    gauge(
      'edge_cameras_recording',
      'Cameras whose ffmpeg is recording',
      () => this.#recording?.recorder.cameras().filter((c) => c.state === 'recording').length ?? 0,
    );
    gauge('edge_alarms_active', 'Active alarms', () => this.alarms.list().length);
    gauge(
      'edge_seam_error_px',
      'Worst seam error at the last live seam check (median distance of matches across the seam), panorama pixels; NaN before one',
      () => this.stitcher?.seamCheck?.errorPx ?? Number.NaN,
    );
    gauge(
      'edge_stitch_queue_slots',
      'Segment slots waiting for or in the stitcher (the stitcher is behind the cameras when this grows)',
      () => this.#recording?.recorder.counters().stitchQueueSlots ?? 0,
    );
    gauge('edge_heartbeat_timestamp_seconds', 'Unix time of the last heartbeat', () => this.#lastHeartbeatMs / 1000);
  }

  /** Stops everything (see the module comment); idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#scheduler?.stop();
    await this.#switching;
    await this.#stopRecording();
    this.#uploadController.abort();
    await this.#uploading;
    await this.server?.close();
    this.spool.close();
  }
}
