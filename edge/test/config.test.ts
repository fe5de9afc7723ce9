import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileEdgeConfig, loadEdgeConfig } from '../src/config/index.ts';

const run = promisify(execFile);
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-config-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const minimal = {
  edge_id: 'edge-1',
  organization_id: 'org-1',
  ingest: { url: 'https://core.example', token: 't' },
  cameras: [{ id: 'camera-0', source: { kind: 'file', path: 'cam0.mp4', loop: true } }],
  panorama: { enabled: false },
  spool: { dir: 'spool' },
};

describe('edge config', () => {
  it('fills defaults and resolves paths against the config folder', async () => {
    const c = await compileEdgeConfig(minimal, '/etc/polyvision');
    expect(c.segment_duration_s).toBe(10);
    expect(c.schedule.lead_s).toBe(900);
    expect(c.ingest.chunk_size_bytes).toBe(8 * 1024 * 1024);
    expect(c.ingest.confirmation).toBe('sha256_header');
    expect(c.spool.dir).toBe('/etc/polyvision/spool');
    expect(c.cameras[0]?.source).toEqual({ kind: 'file', path: '/etc/polyvision/cam0.mp4', loop: true });
  });

  it('names every bad field, its value and what was expected', async () => {
    const error = await compileEdgeConfig(
      {
        ...minimal,
        organization_id: 'org 1',
        ingest: { url: 'ftp://x', token: '' },
        cameras: [
          { id: 'Camera 0', source: { kind: 'rtsp', url: 'http://cam' } },
          { id: 'c1', source: { kind: 'webcam' } },
        ],
        segment_duration_s: 600,
      },
      dir,
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'edge_config_invalid' });
    const message = (error as Error).message;
    for (const part of [
      'organization_id',
      '"org 1"',
      'ingest.url',
      '"ftp://x"',
      'ingest.token',
      'cameras[0].id',
      'cameras[0].source.url',
      'cameras[1].source',
      'segment_duration_s',
    ]) {
      expect(message).toContain(part);
    }
  });

  it('refuses duplicate camera ids and a panorama without calibration', async () => {
    await expect(
      compileEdgeConfig({ ...minimal, cameras: [minimal.cameras[0], minimal.cameras[0]] }, dir),
    ).rejects.toMatchObject({ code: 'edge_config_invalid', message: expect.stringContaining('unique') });
    await expect(compileEdgeConfig({ ...minimal, panorama: { enabled: true } }, dir)).rejects.toMatchObject({
      code: 'edge_calibration_mismatch',
    });
  });

  it('reports an unreadable file and bad JSON; the CLI exits 2 with the message', async () => {
    await expect(loadEdgeConfig(join(dir, 'missing.json'))).rejects.toMatchObject({ code: 'edge_config_unreadable' });
    const bad = join(dir, 'bad.json');
    await writeFile(bad, '{ not json');
    await expect(loadEdgeConfig(bad)).rejects.toMatchObject({ code: 'edge_config_unreadable' });
    const cli = resolve(import.meta.dirname, '../../deploy/src/cli/main.ts');
    const outcome = await run(process.execPath, ['--no-warnings', cli, 'edge', '--config', bad]).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(outcome).toMatchObject({ code: 2, stderr: expect.stringContaining('[edge_config_unreadable]') });
  });
});
