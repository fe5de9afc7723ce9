import { randomBytes } from 'node:crypto';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '@polyvision/shared';

/** Name of the generated status token's file inside the spool folder. */
export const STATUS_TOKEN_FILE = 'status-token';

/** Environment variable that gives the status token when the config has none. */
export const STATUS_TOKEN_VARIABLE = 'EDGE_STATUS_TOKEN';

/**
 * The status API's bearer token: `configured` when the config has one
 * (`status.token`), else `EDGE_STATUS_TOKEN` of `env`, else the one kept in `<spoolDir>/status-token`, made on
 * first start (256 random bits, base64url; file mode 0600, readable by the
 * edge's own user only — the local operator reads it there).
 *
 * @returns the token and where it came from.
 * @throws ConfigError `EDGE_STATUS_TOKEN` when it is set but malformed (the token is not quoted);
 *   the file system's error when the file cannot be read or written.
 */
export async function loadStatusToken(
  configured: string | undefined,
  spoolDir: string,
  env: Record<string, string | undefined> = process.env,
): Promise<{ token: string; source: 'config' | 'env' | 'file' | 'generated'; path: string | null }> {
  if (configured) return { token: configured, source: 'config', path: null };
  const fromEnv = env[STATUS_TOKEN_VARIABLE]?.trim();
  if (fromEnv) {
    if (!/^[A-Za-z0-9\-._~+/]{16,512}$/.test(fromEnv)) {
      throw new ConfigError(
        STATUS_TOKEN_VARIABLE,
        `has ${fromEnv.length} characters; expected 16–512 of A–Z a–z 0–9 - . _ ~ + /`,
      );
    }
    return { token: fromEnv, source: 'env', path: null };
  }
  const path = join(spoolDir, STATUS_TOKEN_FILE);
  try {
    const existing = (await readFile(path, 'utf8')).trim();
    if (existing.length >= 16) return { token: existing, source: 'file', path };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const token = randomBytes(32).toString('base64url');
  await writeFile(path, `${token}\n`, { mode: 0o600 });
  await chmod(path, 0o600);
  return { token, source: 'generated', path };
}
