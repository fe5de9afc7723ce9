/**
 * Records one match: a `CameraRecorder` per camera, the segments of all
 * cameras grouped by wall-clock slot (`floor(start epoch s / segment s)`,
 * see camera-recorder.ts for the alignment policy), each slot stitched into
 * a panorama segment once every camera delivered it (or after
 * `stitchWaitMs`, with the cameras that did), and everything handed to the
 * spool.
 *
 * Raw data is never lost: when stitching fails (alarm `stitch_failed`), the
 * camera segments of that slot go to the spool as `camera` segments even if
 * camera uploads are off. With camera uploads off and a successful stitch,
 * the raw camera segments are removed once the panorama is journaled.
 *
 * The venue calibration the stitcher uses (`venue.json`, panorama plane) is
 * spooled once per match as an `artifact` (source `venue`, seq 0) before any
 * panorama, so the core gives the match's jobs their pitch frame; the
 * spool's unique identity makes a second start of the match a no-op. Just
 * before the match's first panorama, its start marker (`match-start-<slot>.json`,
 * an artifact: uploaded ahead of every panorama) tells the core the match's
 * first slot, so a first panorama that reaches the core after a later one
 * (set aside after a refusal, say) still takes its place in the match.
 *
 * Crash recovery: completed camera segments are re-delivered by their
 * recorders at start; a panorama already journaled for a slot is kept (the
 * re-stitched copy is dropped by the spool), so each slot is stored once.
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Logger, type MatchEndMarker, silentLogger } from '@polyvision/shared';
import type { Alarms } from '../alarms/index.ts';
import { CameraRecorder, type CameraSegment, type CameraSource, type CameraStatus } from '../capture/index.ts';
import { MATCH_END_SOURCE, type Spool } from '../spool/index.ts';
import type { Stitcher } from '../stitch/index.ts';
import { spoolStartMarker } from './start-marker.ts';

/** Options of {@link MatchRecorder}. */
export interface MatchRecorderOptions {
  matchId: string;
  cameras: ReadonlyArray<{ id: string; source: CameraSource }>;
  segmentDurationS: number;
  spool: Spool;
  alarms: Alarms;
  /** The stitcher of the venue; null records cameras only. */
  stitcher: Stitcher | null;
  /** Camera ids in the stitcher's (venue) order. @defaultValue the order of `cameras` */
  stitchOrder?: readonly string[];
  /** Also upload each camera's raw segments. @defaultValue false */
  uploadCameraSegments?: boolean;
  /** How long a slot waits for lagging cameras after its first segment, ms. @defaultValue 2 × segment */
  stitchWaitMs?: number;
  /**
   * Slots waiting for (or in) the stitcher at which the alarm `stitch_behind` is raised: the
   * stitcher is slower than the cameras (the panorama falls further behind the match, the spool
   * fills with raw segments). Cleared when at most one slot waits. @defaultValue 3
   */
  stitchBehindSlots?: number;
  /** Consulted before a camera (re)starts (disk guard). */
  canStart?: () => Promise<boolean>;
  restartBaseDelayMs?: number;
  restartMaxDelayMs?: number;
  ffmpegPath?: string;
  logger?: Logger;
}

interface Slot {
  segments: Map<string, CameraSegment>;
  timer: NodeJS.Timeout | null;
}

export class MatchRecorder {
  readonly #o: MatchRecorderOptions;
  readonly #logger: Logger;
  readonly #recorders: CameraRecorder[];
  readonly #slots = new Map<number, Slot>();
  readonly #incoming: string;
  #queue: Promise<void> = Promise.resolve();
  #stitched = 0;
  #stitchFailures = 0;
  #rawKept = 0;
  /** Slots handed to the stitch queue and not done yet (the one being stitched included). */
  #stitchQueueSlots = 0;
  /** The start marker is in the spool (spooled by this recorder, or found there before a panorama). */
  #startMarked = false;

  constructor(options: MatchRecorderOptions) {
    this.#o = options;
    this.#logger = (options.logger ?? silentLogger).child({ match_id: options.matchId });
    this.#incoming = join(options.spool.dir, 'incoming', options.matchId);
    this.#recorders = options.cameras.map(
      (camera) =>
        new CameraRecorder({
          cameraId: camera.id,
          source: camera.source,
          dir: join(this.#incoming, camera.id),
          segmentDurationS: options.segmentDurationS,
          alarms: options.alarms,
          onSegment: (segment) => this.#onSegment(segment),
          canStart: options.canStart,
          restartBaseDelayMs: options.restartBaseDelayMs,
          restartMaxDelayMs: options.restartMaxDelayMs,
          ffmpegPath: options.ffmpegPath,
          logger: this.#logger,
        }),
    );
  }

  /** Per-camera status. */
  cameras(): CameraStatus[] {
    return this.#recorders.map((r) => r.status());
  }

  /**
   * Since start: panorama segments stitched, stitch failures, slots waiting for cameras, and
   * `rawKept` — camera segments spooled although camera uploads are off, because no panorama holds
   * them (their slot's stitch failed, the slot was already stitched when they arrived, or a second
   * segment of one camera in one slot: a camera running over a second behind the clock), and
   * `stitchQueueSlots` — slots waiting for or in the stitcher (see `stitchBehindSlots`).
   */
  counters(): {
    stitched: number;
    stitchFailures: number;
    pendingSlots: number;
    rawKept: number;
    stitchQueueSlots: number;
  } {
    return {
      stitched: this.#stitched,
      stitchFailures: this.#stitchFailures,
      pendingSlots: this.#slots.size,
      rawKept: this.#rawKept,
      stitchQueueSlots: this.#stitchQueueSlots,
    };
  }

  /**
   * Records until `signal` aborts, then waits for the cameras to close their
   * open segments and for every pending slot to be stitched and spooled.
   */
  async run(signal: AbortSignal): Promise<void> {
    await mkdir(join(this.#incoming, 'panorama'), { recursive: true });
    await this.#spoolCalibration();
    await this.#recoverPanoramas();
    await Promise.all(this.#recorders.map((r) => r.run(signal)));
    for (const slot of [...this.#slots.keys()]) this.#flush(slot);
    await this.#queue;
  }

  /**
   * Salvages what an interrupted run left without recording: completed
   * camera segments are stitched and spooled, finished panoramas spooled,
   * partial files removed. Safe to run before `run()` or instead of it.
   */
  async recover(): Promise<void> {
    await mkdir(join(this.#incoming, 'panorama'), { recursive: true });
    await this.#spoolCalibration();
    await this.#recoverPanoramas();
    for (const r of this.#recorders) await r.recover();
    for (const slot of [...this.#slots.keys()]) this.#flush(slot);
    await this.#queue;
  }

  /**
   * Spools the match's end marker once its recording window closed (not on a
   * shutdown mid-match): an `artifact` of source `match-end` whose seq is the
   * last panorama slot, uploaded as `match-end-<slot>.json`, so the core
   * closes the match's one job without waiting for its idle grace. Nothing
   * when no panorama was recorded (the core has no job to close). Once per match.
   *
   * @returns whether a marker was spooled by this call.
   */
  async spoolEndMarker(): Promise<boolean> {
    const panoramas = this.#o.spool.journal.all().filter((r) => r.matchId === this.#o.matchId && r.kind === 'panorama');
    if (panoramas.length === 0) return false;
    const lastSlot = Math.max(...panoramas.map((r) => r.seq));
    const id = { matchId: this.#o.matchId, kind: 'artifact', source: MATCH_END_SOURCE, seq: lastSlot } as const;
    if (this.#o.spool.journal.find(id)) return false;
    const marker: MatchEndMarker = {
      match_id: this.#o.matchId,
      last_slot: lastSlot,
      panorama_segments: panoramas.length,
      segment_duration_s: this.#o.segmentDurationS,
      ended_at: new Date().toISOString(),
    };
    await mkdir(this.#incoming, { recursive: true });
    const path = join(this.#incoming, 'match-end.json');
    await writeFile(path, `${JSON.stringify(marker, null, 2)}\n`);
    await this.#o.spool.add(path, id);
    return true;
  }

  /** Spools the stitcher's venue calibration as this match's `venue.json` artifact, once per match. */
  async #spoolCalibration(): Promise<void> {
    const stitcher = this.#o.stitcher;
    if (!stitcher) return;
    const id = { matchId: this.#o.matchId, kind: 'artifact', source: 'venue', seq: 0 } as const;
    if (this.#o.spool.journal.find(id)) return;
    const path = join(this.#incoming, 'venue.json');
    await writeFile(path, `${JSON.stringify(stitcher.venue, null, 2)}\n`);
    await this.#o.spool.add(path, id);
  }

  async #recoverPanoramas(): Promise<void> {
    const dir = join(this.#incoming, 'panorama');
    for (const name of await readdir(dir)) {
      const m = /^(\d+)\.mp4$/.exec(name);
      if (m) {
        await this.#o.spool.add(join(dir, name), {
          matchId: this.#o.matchId,
          kind: 'panorama',
          source: 'panorama',
          seq: Number(m[1]),
        });
      } else {
        await rm(join(dir, name), { force: true });
      }
    }
  }

  async #onSegment(segment: CameraSegment): Promise<void> {
    if (!this.#o.stitcher) {
      await this.#spoolCamera(segment);
      return;
    }
    const slotId = Math.floor(segment.startEpochS / this.#o.segmentDurationS);
    let slot = this.#slots.get(slotId);
    if (!slot) {
      slot = { segments: new Map(), timer: null };
      this.#slots.set(slotId, slot);
      slot.timer = setTimeout(() => this.#flush(slotId), this.#o.stitchWaitMs ?? 2_000 * this.#o.segmentDurationS);
    }
    const previous = slot.segments.get(segment.cameraId);
    if (previous) {
      // Two segments of one camera in one slot (a restart inside the slot): keep both, stitch the longer.
      const [keep, extra] = previous.durationS >= segment.durationS ? [previous, segment] : [segment, previous];
      slot.segments.set(segment.cameraId, keep);
      await this.#keepRaw(extra, 'a second segment of this camera in one slot');
    } else {
      slot.segments.set(segment.cameraId, segment);
    }
    if (slot.segments.size === this.#recorders.length) this.#flush(slotId);
  }

  /**
   * Hands `slotId` to the stitcher, and every earlier slot still waiting before it, in time order:
   * panoramas reach the spool (and the core) in slot order. A camera delivers its segments in time
   * order, so an earlier slot gets nothing more once a later one is handed on; without this, a first
   * slot that one camera started too late for waited for its timer while the next slot went first,
   * opened the match job at the later slot, and was refused as before the match's start.
   */
  #flush(slotId: number): void {
    for (const earlier of slotsUpTo(this.#slots.keys(), slotId)) this.#flushOne(earlier);
  }

  #flushOne(slotId: number): void {
    const slot = this.#slots.get(slotId);
    if (!slot) return;
    this.#slots.delete(slotId);
    if (slot.timer) clearTimeout(slot.timer);
    this.#stitchQueueSlots++;
    this.#checkStitchBehind();
    this.#queue = this.#queue
      .then(() => this.#stitchSlot(slotId, slot))
      .catch(() => {})
      .finally(() => {
        this.#stitchQueueSlots--;
        this.#checkStitchBehind();
      });
  }

  /** Raises `stitch_behind` while `stitchBehindSlots` or more slots wait for the stitcher; clears it at ≤ 1. */
  #checkStitchBehind(): void {
    const waiting = this.#stitchQueueSlots;
    if (waiting >= (this.#o.stitchBehindSlots ?? 3)) {
      this.#o.alarms.raise(
        'stitch_behind',
        this.#o.matchId,
        `stitching runs behind the cameras: ${waiting} slots (${waiting * this.#o.segmentDurationS} s of footage) wait for the stitcher, and the panorama falls further behind the match; lower the panorama width, use NVENC, or give the edge more CPU`,
        { details: { slots: waiting } },
      );
    } else if (waiting <= 1) {
      this.#o.alarms.clear('stitch_behind', this.#o.matchId);
    }
  }

  async #stitchSlot(slotId: number, slot: Slot): Promise<void> {
    const stitcher = this.#o.stitcher as Stitcher;
    const order = this.#o.stitchOrder ?? this.#o.cameras.map((c) => c.id);
    const inputs = order.map((id) => {
      const s = slot.segments.get(id);
      return s ? { cameraId: id, path: s.path } : null;
    });
    const out = join(this.#incoming, 'panorama', `${slotId}.mp4`);
    // Whether THESE segments went into a panorama. A slot already stitched (a segment that arrived
    // after its slot was flushed, or segments recovered after a restart) is not stitched again, and
    // its segments are kept as camera segments: deleting them would drop footage no panorama holds.
    let stitched = false;
    try {
      const existing = this.#o.spool.journal.find({
        matchId: this.#o.matchId,
        kind: 'panorama',
        source: 'panorama',
        seq: slotId,
      });
      if (!existing) {
        await stitcher.stitch(inputs, out);
        if (!this.#startMarked) {
          // Looks through the journal once per recorder, not at every slot.
          await spoolStartMarker(this.#o.spool, {
            matchId: this.#o.matchId,
            firstSlot: slotId,
            segmentDurationS: this.#o.segmentDurationS,
            dir: this.#incoming,
          });
          this.#startMarked = true;
        }
        await this.#o.spool.add(out, { matchId: this.#o.matchId, kind: 'panorama', source: 'panorama', seq: slotId });
        stitched = true;
        this.#stitched++;
      }
      this.#o.alarms.clear('stitch_failed');
    } catch (error) {
      this.#stitchFailures++;
      this.#o.alarms.raise(
        'stitch_failed',
        `slot-${slotId}`,
        `stitching slot ${slotId} of ${this.#o.matchId} failed (the camera segments are kept): ${(error as Error).message}`,
      );
    }
    for (const segment of slot.segments.values()) {
      if (this.#o.uploadCameraSegments) await this.#spoolCamera(segment);
      else if (!stitched) await this.#keepRaw(segment, `slot ${slotId} was not stitched with it`);
      else await rm(segment.path, { force: true });
    }
  }

  /** Spools a camera segment that no panorama holds (counted in `rawKept` when camera uploads are off). */
  async #keepRaw(segment: CameraSegment, why: string): Promise<void> {
    if (!this.#o.uploadCameraSegments) {
      this.#rawKept++;
      this.#logger.warn(
        { camera_id: segment.cameraId, seq: segment.seq, why },
        'camera segment kept raw: no panorama holds it',
      );
    }
    await this.#spoolCamera(segment);
  }

  async #spoolCamera(segment: CameraSegment): Promise<void> {
    await this.#o.spool.add(segment.path, {
      matchId: this.#o.matchId,
      kind: 'camera',
      source: segment.cameraId,
      seq: segment.seq,
    });
  }
}

/** The slot ids of `pending` up to and including `slotId`, earliest first. */
export function slotsUpTo(pending: Iterable<number>, slotId: number): number[] {
  return [...pending].filter((id) => id <= slotId).sort((a, b) => a - b);
}
