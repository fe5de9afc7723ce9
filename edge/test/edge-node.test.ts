/**
 * The whole edge node against a real tus server (the ingest stand-in in
 * support/tus-server.ts): in-process for the schedule and the status API,
 * and as the real CLI in a child process for kill -9.
 */
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnTracked, stopTracked, waitFor } from '../../test/support/index.ts';
import { Alarms } from '../src/alarms/index.ts';
import { compileEdgeConfig, EdgeNode, type EdgeStatus, Spool, uploadFileName } from '../src/index.ts';
import { makeClip, type TestClip } from './support/clip.ts';
import { mountSmallDisk } from './support/tmpfs.ts';
import { startTestIngest, type TestIngest } from './support/tus-server.ts';

const TOKEN = 'edge-secret';
let clip: TestClip;
let work: string;

beforeAll(async () => {
  clip = await makeClip();
  work = await mkdtemp(join(tmpdir(), 'edge-node-'));
});
afterAll(async () => {
  await clip?.remove();
  if (work) await rm(work, { recursive: true, force: true });
});

function configFor(ingest: TestIngest, spoolDir: string, extra: Record<string, unknown> = {}) {
  return {
    edge_id: 'edge-test',
    organization_id: 'org-1',
    ingest: { url: ingest.url, token: TOKEN, chunk_size_bytes: 64 * 1024 },
    cameras: clip.venue.cameras.map((c) => ({ id: c.id, source: { kind: 'synthetic', clip_dir: clip.dir } })),
    calibration: join(clip.dir, 'venue.json'),
    panorama: { encoder: 'libx264' },
    segment_duration_s: 1,
    spool: { dir: spoolDir, min_free_bytes: 0 },
    status: { port: 0 },
    ...extra,
  };
}

describe('edge node', () => {
  it('starts recording at the scheduled window, uploads every panorama once, and reports it on the status API', async () => {
    const ingest = await startTestIngest({ dir: join(work, 'ingest-1'), token: TOKEN });
    const kickoff = new Date(Date.now() + 3_000).toISOString();
    const config = await compileEdgeConfig(
      configFor(ingest, join(work, 'spool-1'), {
        schedule: {
          lead_s: 1,
          tail_s: 0,
          matches: [{ match_id: 'cup-final', kickoff, duration_s: 3 }],
          heartbeat_s: 1,
        },
      }),
      work,
    );
    const node = await EdgeNode.start(config);
    try {
      const api = node.server?.url as string;
      const auth = { headers: { authorization: `Bearer ${node.statusToken}` } };
      // The status API is behind the local token (generated into the spool folder, mode 0600).
      expect((await fetch(`${api}/api/v1/status`)).status).toBe(401);
      expect((await fetch(`${api}/metrics`)).status).toBe(401);
      expect((await readFile(join(config.spool.dir, 'status-token'), 'utf8')).trim()).toBe(node.statusToken);
      const first = (await (await fetch(`${api}/api/v1/status`, auth)).json()) as EdgeStatus;
      // Idle before the window (lead 1 s); on a slow start the window may already be open, and then
      // the start time is checked below.
      if (Date.now() < Date.parse(kickoff) - 1_000) expect(first.recording.match_id).toBeNull();
      expect(first.schedule[0]).toMatchObject({ match_id: 'cup-final', kickoff });
      await waitFor(() => node.recordingMatchId === 'cup-final', { timeoutMs: 5_000, message: 'recording starts' });
      expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(kickoff) - 1_100);
      const during = (await (await fetch(`${api}/api/v1/status`, auth)).json()) as EdgeStatus;
      expect(during.cameras.map((c) => c.cameraId)).toEqual(['camera-0', 'camera-1', 'camera-2']);
      await waitFor(() => node.recordingMatchId === null, { timeoutMs: 15_000, message: 'recording stops' });
      await waitFor(() => node.spool.journal.backlog().count === 0, { timeoutMs: 20_000, message: 'backlog empty' });
      // The counter moves just after the spool deleted the last file.
      await waitFor(() => node.uploader.status().filesConfirmed === node.spool.journal.all().length, {
        timeoutMs: 5_000,
        message: 'every file confirmed',
      });
      const rows = node.spool.journal.all();
      expect(rows.length).toBeGreaterThanOrEqual(3);
      const received = await ingest.completed();
      expect(received.map((r) => r.metadata.filename).sort()).toEqual(rows.map((r) => uploadFileName(r)).sort());
      for (const row of rows)
        expect(received.find((r) => r.metadata.filename === uploadFileName(row))?.sha256).toBe(row.sha256);
      // The venue calibration the stitcher used went with the match, once, as the artifact venue.json;
      // the start marker named the first panorama slot, the window's close sent the end marker naming
      // the last (issue #18).
      const artifacts = received.filter((r) => r.metadata.kind === 'artifact').map((r) => r.metadata.filename);
      const slots = rows.filter((r) => r.kind === 'panorama').map((r) => r.seq);
      expect(artifacts.sort()).toEqual([
        `match-end-${Math.max(...slots)}.json`,
        `match-start-${Math.min(...slots)}.json`,
        'venue.json',
      ]);
      const status = (await (await fetch(`${api}/api/v1/status`, auth)).json()) as EdgeStatus;
      expect(status.upload.filesConfirmed).toBe(rows.length);
      expect(status.spool.backlog_count).toBe(0);
      expect(status.recording.panorama_segments).toBe(rows.filter((r) => r.kind === 'panorama').length);
      const metrics = await (await fetch(`${api}/metrics`, auth)).text();
      expect(metrics).toMatch(/edge_spool_backlog_segments\{[^}]*\} 0/);
      expect(metrics).toMatch(/edge_heartbeat_timestamp_seconds\{[^}]*\} [1-9]/);
      // The live seam check ran after the first panorama (its gauge is a number once a seam had enough matches).
      expect(metrics).toMatch(/edge_seam_error_px\{[^}]*\} (NaN|[0-9.]+)/);
      expect((await fetch(`${api}/health/ready`)).status).toBe(200);
    } finally {
      await node.close();
      await ingest.stop();
    }
  });

  it('refuses a bad calibration and a schedule in the past with clear errors', async () => {
    const ingest = await startTestIngest({ dir: join(work, 'ingest-2'), token: TOKEN });
    try {
      const venue = JSON.parse(await readFile(join(clip.dir, 'venue.json'), 'utf8'));
      venue.cameras[0].image_to_panorama = [
        [0, 0, 0],
        [0, 0, 0],
        [0, 0, 1],
      ];
      const config = await compileEdgeConfig(configFor(ingest, join(work, 'spool-2'), { calibration: venue }), work);
      await expect(EdgeNode.start(config)).rejects.toMatchObject({ code: 'stitch_singular_calibration' });
      await expect(
        compileEdgeConfig(
          configFor(ingest, join(work, 'spool-2'), {
            schedule: { matches: [{ match_id: 'old', kickoff: '2020-01-01T15:00:00Z', duration_s: 6000 }] },
          }),
          work,
        ),
      ).rejects.toMatchObject({ code: 'edge_schedule_in_past', message: expect.stringContaining('old') });
      await expect(
        compileEdgeConfig(
          configFor(ingest, join(work, 'spool-2'), {
            cameras: [{ id: 'camera-9', source: { kind: 'file', path: 'x.mp4' } }],
          }),
          work,
        ),
      ).rejects.toMatchObject({ code: 'edge_calibration_mismatch' });
    } finally {
      await ingest.stop();
    }
  });

  it('kill -9 mid-segment and mid-upload, then restart: every completed segment arrives once and byte-identical', async () => {
    const ingest = await startTestIngest({ dir: join(work, 'ingest-3'), token: TOKEN });
    const spoolDir = join(work, 'spool-3');
    const slow = join(work, 'slow.json');
    const fast = join(work, 'fast.json');
    await writeFile(
      slow,
      JSON.stringify(
        configFor(ingest, spoolDir, {
          ingest: {
            url: ingest.url,
            token: TOKEN,
            chunk_size_bytes: 65536,
            bandwidth_bytes_per_s: 24_000,
            upload_camera_segments: true,
          },
        }),
      ),
    );
    await writeFile(
      fast,
      JSON.stringify(
        configFor(ingest, spoolDir, { ingest: { url: ingest.url, token: TOKEN, upload_camera_segments: true } }),
      ),
    );
    const cli = join(import.meta.dirname, '../../deploy/src/cli/main.ts');
    const start = (config: string, args: string[]): ChildProcess =>
      spawnTracked(process.execPath, ['--no-warnings', cli, 'edge', '--config', config, '--quiet', ...args], {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, LOG_LEVEL: 'warn' },
      });
    let stderr = '';
    const first = start(slow, ['--match-id', 'derby', '--duration', '60']);
    first.stderr?.on('data', (d) => {
      stderr += d;
    });
    let killed: { journaled: Map<string, string> } | null = null;
    try {
      // Wait for: three panoramas journaled and an upload half-way through.
      await waitFor(
        async () => {
          const journal = join(spoolDir, 'journal.sqlite');
          const { DatabaseSync } = await import('node:sqlite');
          const db = new DatabaseSync(journal, { readOnly: true });
          try {
            const n = db.prepare("SELECT COUNT(*) AS n FROM segments WHERE kind = 'panorama'").get() as { n: number };
            return Number(n.n) >= 3 && (await ingest.partial()).some((p) => p.receivedBytes > 0);
          } finally {
            db.close();
          }
        },
        {
          timeoutMs: 40_000,
          intervalMs: 200,
          message: `3 panoramas and a partial upload (stderr: ${stderr.slice(-500)})`,
        },
      );
      process.kill(first.pid as number, 'SIGKILL');
      await new Promise((r) => first.once('exit', r));
      // What the journal holds at the moment of the kill (all of it must arrive).
      const spool = await Spool.open({ dir: spoolDir, alarms: new Alarms(), minFreeBytes: 0 });
      killed = { journaled: new Map(spool.journal.all().map((r) => [uploadFileName(r), r.sha256])) };
      spool.close();
    } finally {
      await stopTracked(first, 1_000);
    }
    // The ffmpeg children died with the edge (parent-death signal): none writes into the spool any more.
    await waitFor(
      async () => {
        const { execFile } = await import('node:child_process');
        const out = await new Promise<string>((r) =>
          execFile('pgrep', ['-f', spoolDir], (_e, so) => r(String(so ?? ''))),
        );
        return out.trim() === '';
      },
      { timeoutMs: 5_000, message: 'no ffmpeg left writing into the spool' },
    );

    const second = start(fast, ['--exit-when-idle']);
    second.stderr?.on('data', (d) => {
      stderr += d;
    });
    try {
      const code = await new Promise<number | null>((r) => second.once('exit', (c) => r(c)));
      expect(code, stderr.slice(-2000)).toBe(0);
    } finally {
      await stopTracked(second, 1_000);
    }
    const received = await ingest.completed();
    const names = received.map((r) => r.metadata.filename as string);
    expect(new Set(names).size).toBe(names.length); // once
    for (const [name, digest] of killed?.journaled ?? []) {
      expect(received.find((r) => r.metadata.filename === name)?.sha256, name).toBe(digest); // byte-identical
    }
    expect(received.filter((r) => r.metadata.kind === 'panorama').length).toBeGreaterThanOrEqual(3);
    // The upload cut by the kill was resumed, not created again: one creation per file.
    expect(ingest.log.filter((l) => l.method === 'POST' && l.status === 201).length).toBe(received.length);
    expect(await ingest.partial()).toEqual([]);
    // Every video the ingest holds is complete (no half-written segment was sent).
    for (const r of received.filter((r) => r.metadata.kind !== 'artifact')) expect(r.sizeBytes).toBeGreaterThan(1000);
    // Completed camera segments not yet stitched at the kill were salvaged after the restart.
    expect(received.length).toBeGreaterThanOrEqual(killed?.journaled.size ?? 0);
    // The cut upload was resumed: tus-js-client asked the stored URL for its offset.
    expect(ingest.log.filter((l) => l.method === 'HEAD').length).toBeGreaterThanOrEqual(1);
    await ingest.stop();
  }, 120_000);
  it('on a full local disk: pauses the cameras cleanly with an alarm, loses nothing, and resumes when space is back', async (ctx) => {
    const disk = await mountSmallDisk(24);
    if (!disk) {
      ctx.skip();
      return;
    }
    const ingest = await startTestIngest({ dir: join(work, 'ingest-4'), token: TOKEN });
    await ingest.stop(); // unreachable until the disk is full
    const minFree = 4 * 1024 * 1024;
    try {
      const config = await compileEdgeConfig(
        configFor(ingest, join(disk.dir, 'spool'), {
          ingest: { url: ingest.url, token: TOKEN, upload_camera_segments: true, max_retry_delay_ms: 1_000 },
          spool: { dir: join(disk.dir, 'spool'), min_free_bytes: minFree },
          schedule: { cleanup_cron: '* * * * * *' },
        }),
        work,
      );
      const node = await EdgeNode.start(config, { recordNow: { matchId: 'full-disk', durationS: 600 } });
      try {
        // Leave ~700 KB above the guard's limit: a few seconds of recording.
        const s = await statfs(disk.dir);
        await writeFile(
          join(disk.dir, 'filler'),
          Buffer.alloc(Number(s.bavail) * Number(s.bsize) - minFree - 700 * 1024),
        );
        await waitFor(() => node.alarms.has('spool_disk_low'), { timeoutMs: 30_000, message: 'spool_disk_low' });
        const status = await waitFor(
          async () => {
            const st = await node.status();
            return st.cameras.every((c) => c.state === 'paused') ? st : null;
          },
          { timeoutMs: 15_000, message: 'cameras paused' },
        );
        expect(status.spool.disk_ok).toBe(false);
        expect(node.alarms.has('camera_down')).toBe(false); // stopped cleanly, not crashed on ENOSPC
        const rowsAtPause = node.spool.journal.all();
        expect(rowsAtPause.length).toBeGreaterThan(0);
        for (const row of rowsAtPause) {
          const digest = createHash('sha256')
            .update(await readFile(node.spool.pathOf(row)))
            .digest('hex');
          expect(
            digest,
            `local ${row.fileName} ${JSON.stringify(node.spool.journal.all().map((r) => [r.id, r.fileName, r.state, r.sha256.slice(0, 8)]))}`,
          ).toBe(row.sha256);
        }
        // The ingest comes back: the backlog drains (confirmed files are deleted, the rest stays).
        await ingest.start();
        await waitFor(() => node.spool.journal.backlog().count === 0, {
          timeoutMs: 30_000,
          message: 'backlog drained',
        });
        // Space is back (the operator removes what filled the disk): the alarm clears, recording resumes.
        await rm(join(disk.dir, 'filler'));
        const lastSeq = Math.max(...rowsAtPause.map((r) => r.seq));
        await waitFor(() => !node.alarms.has('spool_disk_low'), { timeoutMs: 30_000, message: 'alarm cleared' }).catch(
          async (error) => {
            throw new Error(`${(error as Error).message}: ${JSON.stringify(await node.status())}`);
          },
        );
        await waitFor(() => node.spool.journal.all().some((r) => r.seq > lastSeq + 1), {
          timeoutMs: 30_000,
          message: 'recording resumed',
        });
        const received = await ingest.completed();
        for (const row of rowsAtPause) {
          expect(
            received.find((r) => r.metadata.filename === uploadFileName(row))?.sha256,
            `received ${row.fileName} ${JSON.stringify(received.filter((r) => r.metadata.filename === uploadFileName(row)))}`,
          ).toBe(row.sha256);
        }
      } finally {
        await node.close();
      }
    } finally {
      await ingest.stop();
      await disk.remove();
    }
  }, 120_000);
});
