/**
 * The leak check (test/support/leak-check.ts) run for real: vitest is started
 * on fixture files that leak a child process or a Redis connection, and on one
 * that cleans up; the first two must fail, the third pass, and the leaked
 * child must be dead afterwards.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceUrl } from '../service-env.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..', '..', '..');
const vitestBin = path.join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs');

interface JsonReport {
  testResults: { name: string; status: string; message: string }[];
}

describe('leak check', () => {
  let report: JsonReport;
  let stdout = '';
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'leak-check-'));
    const outputFile = path.join(dir, 'report.json');
    const child = spawn(
      process.execPath,
      [
        vitestBin,
        'run',
        '--config',
        path.join(here, 'fixtures', 'vitest.fixtures.config.ts'),
        '--reporter=json',
        `--outputFile=${outputFile}`,
      ],
      { cwd: repoRoot, env: { ...process.env, REDIS_URL: serviceUrl('REDIS_URL') }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stdout += chunk;
    });
    await new Promise((resolve) => child.once('exit', resolve));
    report = JSON.parse(await readFile(outputFile, 'utf8')) as JsonReport;
  }, 60_000);

  afterAll(() => rm(dir, { recursive: true, force: true }));

  const result = (fixture: string) => {
    const found = report.testResults.find((r) => r.name.endsWith(fixture));
    if (!found) throw new Error(`no result for ${fixture} in ${JSON.stringify(report.testResults.map((r) => r.name))}`);
    return found;
  };

  it('fails a file that leaves a tracked child running, and kills the child', async () => {
    const leaked = result('leaks-child.fixture.ts');
    expect(leaked.status).toBe('failed');
    expect(leaked.message).toMatch(/leak check: .*child process \d+ \(sleep 300\) was still running/s);
    const pid = Number(/LEAKED_PID=(\d+)/.exec(stdout)?.[1]);
    expect(pid).toBeGreaterThan(0);
    expect(() => process.kill(pid, 0)).toThrow();
  });

  it('fails a file that leaves a Redis connection open', () => {
    const leaked = result('leaks-connection.fixture.ts');
    expect(leaked.status).toBe('failed');
    const port = new URL(serviceUrl('REDIS_URL')).port;
    expect(leaked.message).toMatch(new RegExp(`leak check: .*connection to .*:${port} .* is still open`, 's'));
  });

  it('passes a file that cleans up', () => {
    expect(result('clean.fixture.ts').status).toBe('passed');
  });
});
