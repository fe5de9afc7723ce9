import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/index.ts';
import { Alarms } from '../src/alarms/index.ts';
import { Spool, segmentFileName } from '../src/spool/index.ts';
import { mountSmallDisk } from './support/tmpfs.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-spool-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

async function file(name: string, data: Buffer | string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, data);
  return path;
}

describe('spool', () => {
  it('journals a segment with its sha256, moves it in, and is idempotent', async () => {
    const alarms = new Alarms();
    const spool = await Spool.open({ dir: join(dir, 'spool'), alarms });
    const added: number[] = [];
    spool.onAdded((row) => added.push(row.id));
    const data = Buffer.alloc(10_000, 7);
    const row = await spool.add(await file('a.mp4', data), {
      matchId: 'm1',
      kind: 'camera',
      source: 'camera-0',
      seq: 3,
    });
    expect(row.sha256).toBe(sha(data));
    expect(row.sizeBytes).toBe(10_000);
    expect(row.state).toBe('pending');
    expect(await readFile(spool.pathOf(row))).toEqual(data);
    const again = await spool.add(spool.pathOf(row), { matchId: 'm1', kind: 'camera', source: 'camera-0', seq: 3 });
    expect(again.id).toBe(row.id);
    expect(added).toEqual([row.id]);
    expect(spool.journal.backlog()).toEqual({ count: 1, sizeBytes: 10_000 });
    spool.close();
  });

  it('drops a re-delivered duplicate but parks a different file claiming the same identity, with an alarm', async () => {
    const alarms = new Alarms();
    const spool = await Spool.open({ dir: join(dir, 'spool'), alarms });
    const id = { matchId: 'm1', kind: 'camera' as const, source: 'camera-0', seq: 7 };
    const row = await spool.add(await file('a.mp4', 'same bytes'), id);
    const dup = await file('dup.mp4', 'same bytes');
    expect((await spool.add(dup, id)).id).toBe(row.id);
    await expect(stat(dup)).rejects.toThrow();
    const other = await file('other.mp4', 'other bytes');
    await Promise.all([spool.add(other, id), spool.add(await file('dup2.mp4', 'same bytes'), id)]);
    expect(sha(await readFile(spool.pathOf(row)))).toBe(row.sha256);
    expect(alarms.has('spool_identity_conflict', row.fileName)).toBe(true);
    const parked = await readdir(join(dir, 'spool', 'conflicts'));
    expect(parked).toHaveLength(1);
    expect(await readFile(join(dir, 'spool', 'conflicts', parked[0] as string), 'utf8')).toBe('other bytes');
    spool.close();
  });

  it('deletes a file only after a matching sha256; a mismatch raises an alarm and re-queues', async () => {
    const alarms = new Alarms();
    const spool = await Spool.open({ dir: join(dir, 'spool'), alarms });
    const row = await spool.add(await file('a.mp4', 'abc'), {
      matchId: 'm1',
      kind: 'panorama',
      source: 'panorama',
      seq: 0,
    });
    spool.journal.setUploadUrl(row.id, 'http://x/1');
    expect(await spool.confirm(row.id, sha('abd'))).toBe(false);
    expect(alarms.has('upload_sha256_mismatch')).toBe(true);
    expect(spool.journal.get(row.id)).toMatchObject({ state: 'pending', uploadUrl: null });
    await stat(spool.pathOf(row));
    expect(await spool.confirm(row.id, sha('abc'))).toBe(true);
    expect(spool.journal.get(row.id)?.state).toBe('deleted');
    await expect(stat(spool.pathOf(row))).rejects.toThrow();
    expect(spool.journal.backlog().count).toBe(0);
    spool.close();
  });

  it('refuses unsafe identities with a clear error', async () => {
    const spool = await Spool.open({ dir: join(dir, 'spool'), alarms: new Alarms() });
    await expect(
      spool.add(await file('a.mp4', 'x'), { matchId: '../etc', kind: 'camera', source: 'c', seq: 0 }),
    ).rejects.toMatchObject({ code: 'spool_bad_identity' });
    await expect(
      spool.add(await file('b.mp4', 'x'), { matchId: 'm', kind: 'camera', source: 'c', seq: -1 }),
    ).rejects.toMatchObject({ code: 'spool_bad_identity' });
    spool.close();
  });

  it('recovers after a crash: journals renamed-but-unjournaled files, alarms on missing files', async () => {
    const spoolDir = join(dir, 'spool');
    const alarms = new Alarms();
    const spool = await Spool.open({ dir: spoolDir, alarms });
    const row = await spool.add(await file('a.mp4', 'one'), {
      matchId: 'm',
      kind: 'camera',
      source: 'camera-1',
      seq: 1,
    });
    spool.close();
    // A crash between rename and insert leaves a named file without a row; another file vanished.
    const orphan = segmentFileName({ matchId: 'm', kind: 'camera', source: 'camera-1', seq: 2 });
    await writeFile(join(spoolDir, 'segments', orphan), 'two');
    await writeFile(join(spoolDir, 'segments', 'garbage.tmp'), 'x');
    await rm(join(spoolDir, 'segments', row.fileName));
    const reopened = await Spool.open({ dir: spoolDir, alarms });
    const rows = reopened.journal.all();
    expect(rows.map((r) => [r.seq, r.sha256])).toEqual([
      [1, sha('one')],
      [2, sha('two')],
    ]);
    expect(alarms.has('spool_segment_missing', row.fileName)).toBe(true);
    expect(await readdir(join(spoolDir, 'segments'))).not.toContain('garbage.tmp');
    reopened.close();
  });

  it('survives kill -9 while adding: every journaled row has its complete file', async () => {
    const spoolDir = join(dir, 'spool');
    const script = `
      import { writeFileSync } from 'node:fs';
      import { join } from 'node:path';
      import { Alarms } from ${JSON.stringify(new URL('../src/alarms/index.ts', import.meta.url).pathname)};
      import { Spool } from ${JSON.stringify(new URL('../src/spool/index.ts', import.meta.url).pathname)};
      const spool = await Spool.open({ dir: ${JSON.stringify(spoolDir)}, alarms: new Alarms() });
      for (let i = 0; ; i++) {
        const p = join(${JSON.stringify(dir)}, 'in-' + i + '.mp4');
        writeFileSync(p, Buffer.alloc(50_000 + i, i % 251));
        await spool.add(p, { matchId: 'm', kind: 'camera', source: 'camera-0', seq: i });
        if (i === 5) process.stdout.write('ready\\n');
      }
    `;
    const child = spawn(process.execPath, ['--input-type=module', '--no-warnings', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    await waitFor(() => out.includes('ready'), { timeoutMs: 20_000, message: 'writer ready' });
    await new Promise((r) => setTimeout(r, 150));
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    const spool = await Spool.open({ dir: spoolDir, alarms: new Alarms() });
    const rows = spool.journal.all();
    expect(rows.length).toBeGreaterThan(5);
    for (const row of rows) {
      const data = await readFile(spool.pathOf(row));
      expect(data.length).toBe(50_000 + row.seq);
      expect(sha(data)).toBe(row.sha256);
    }
    expect(rows.map((r) => r.seq)).toEqual(rows.map((_, i) => i));
    spool.close();
  });
});

describe('disk guard', () => {
  it('frees confirmed camera segments first, never unconfirmed ones, and alarms when the disk stays full', async (ctx) => {
    const disk = await mountSmallDisk(8);
    if (!disk) {
      ctx.skip();
      return;
    }
    try {
      const alarms = new Alarms();
      const spool = await Spool.open({
        dir: join(disk.dir, 'spool'),
        alarms,
        minFreeBytes: 2 * 1024 * 1024,
        keepConfirmedMs: 3_600_000,
      });
      const mib = Buffer.alloc(1024 * 1024, 1);
      // Written on the small disk itself (the spool renames within one file system).
      const addOnDisk = async (kind: 'camera' | 'panorama', seq: number) => {
        const name = `${kind}${seq}.in`;
        await writeFile(join(disk.dir, name), mib);
        return spool.add(join(disk.dir, name), {
          matchId: 'm',
          kind,
          source: kind === 'camera' ? 'camera-0' : 'panorama',
          seq,
        });
      };
      const pano = await addOnDisk('panorama', 0);
      const cam = await addOnDisk('camera', 0);
      const unconfirmed = await addOnDisk('camera', 1);
      await spool.confirm(pano.id, pano.sha256);
      await spool.confirm(cam.id, cam.sha256);
      expect((await spool.guard()).ok).toBe(true);
      await stat(spool.pathOf(cam));
      // Fill the disk so that only ~1.5 MiB stay free: the guard must delete the camera segment first.
      const free = await spool.freeBytes();
      await writeFile(join(disk.dir, 'filler'), Buffer.alloc(free - 1.5 * 1024 * 1024));
      const first = await spool.guard();
      expect(first.ok).toBe(true);
      expect(first.freedFiles).toBe(1);
      await expect(stat(spool.pathOf(cam))).rejects.toThrow();
      await stat(spool.pathOf(pano));
      // Fill again: the panorama goes, the unconfirmed segment stays, and the alarm is raised.
      await rm(join(disk.dir, 'filler'));
      const free2 = await spool.freeBytes();
      await writeFile(join(disk.dir, 'filler'), Buffer.alloc(free2 - 512 * 1024));
      const second = await spool.guard();
      expect(second.ok).toBe(false);
      expect(alarms.has('spool_disk_low')).toBe(true);
      await expect(stat(spool.pathOf(pano))).rejects.toThrow();
      expect(sha(await readFile(spool.pathOf(unconfirmed)))).toBe(unconfirmed.sha256);
      // Space comes back: the alarm clears.
      await rm(join(disk.dir, 'filler'));
      expect((await spool.guard()).ok).toBe(true);
      expect(alarms.has('spool_disk_low')).toBe(false);
      spool.close();
    } finally {
      await disk.remove();
    }
  });
});
