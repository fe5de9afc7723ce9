import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestSchema, serviceUrl, type TestSchema } from '../../../test/support/index.ts';

const run = promisify(execFile);
const CLI = resolve(fileURLToPath(new URL('../../../deploy/src/cli/main.ts', import.meta.url)));
let schema: TestSchema;

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, 'ingest', ...args], {
      env: { PATH: process.env.PATH, DATABASE_URL: serviceUrl('DATABASE_URL'), DATABASE_SCHEMA: schema.schema },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(async () => {
  schema = await createTestSchema('ingest_cli');
});
afterAll(async () => {
  await schema.close();
});

describe('pnpm polyvision ingest token', () => {
  it('creates (stored hashed), lists and revokes edge tokens', async () => {
    const created = await cli('token', 'create', '--organization', 'acme', '--edge', 'edge-9', '--json');
    expect(created.code).toBe(0);
    const { token, token_id } = JSON.parse(created.stdout) as { token: string; token_id: string };
    expect(token).toMatch(/^pve_[0-9a-f]{16}_/);
    const stored = await schema.pool.query('SELECT token_sha256, organization_id, edge_id FROM edge_tokens');
    expect(stored.rows).toHaveLength(1);
    expect(stored.rows[0].organization_id).toBe('acme');
    expect(stored.rows[0].edge_id).toBe('edge-9');
    expect(JSON.stringify(stored.rows)).not.toContain(token.slice(22));
    const listed = await cli('token', 'list', '--organization', 'acme');
    expect(listed.stdout).toContain(`${token_id}\tacme\tedge-9`);
    expect(listed.stdout).toContain('active');
    expect((await cli('token', 'revoke', token_id)).code).toBe(0);
    expect((await cli('token', 'list')).stdout).toContain('revoked');
    expect((await cli('token', 'revoke', token_id)).code).toBe(1);
  });

  it('refuses bad usage with exit status 2 and a message', async () => {
    const missing = await cli('token', 'create');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--organization is required');
    const badOrg = await cli('token', 'create', '--organization', '../x');
    expect(badOrg.code).toBe(2);
    expect(badOrg.stderr).toContain('not a valid id');
    expect((await cli('token', 'frobnicate')).code).toBe(2);
    expect((await cli('--help')).stdout).toContain('token create');
  });
});
