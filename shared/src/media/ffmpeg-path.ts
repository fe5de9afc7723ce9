import { accessSync, constants, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, join } from 'node:path';
import { PolyvisionError } from '../errors/index.ts';

/** Where a binary was found. */
export interface ResolvedBinary {
  path: string;
  source: 'env' | 'ffmpeg-static' | 'PATH';
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** The ffmpeg-static binary path when the optional package is installed and its binary was downloaded. */
function ffmpegStaticPath(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    const path: unknown = require('ffmpeg-static');
    return typeof path === 'string' && isExecutable(path) ? path : undefined;
  } catch {
    return undefined;
  }
}

function resolveBinary(
  name: 'ffmpeg' | 'ffprobe',
  variable: string,
  staticPath: () => string | undefined,
  env: NodeJS.ProcessEnv,
): ResolvedBinary {
  const fromEnv = env[variable];
  if (fromEnv) {
    if (!isExecutable(fromEnv)) {
      throw new PolyvisionError(`${name}_not_found`, `${variable}=${fromEnv} is not an executable file`, {
        details: { variable, value: fromEnv },
      });
    }
    return { path: fromEnv, source: 'env' };
  }
  const fromStatic = staticPath();
  if (fromStatic) return { path: fromStatic, source: 'ffmpeg-static' };
  const fromPath = onPath(name, env);
  if (fromPath) return { path: fromPath, source: 'PATH' };
  throw new PolyvisionError(
    `${name}_not_found`,
    `${name} not found: set ${variable}, install the optional ffmpeg-static package, or put ${name} on PATH (Debian: apt-get install ffmpeg)`,
    { details: { variable } },
  );
}

/**
 * Finds ffmpeg (ENVIRONMENT.md): `FFMPEG_PATH`, else the ffmpeg-static
 * binary if it was downloaded (its install script is disabled here), else
 * `ffmpeg` on `PATH`.
 *
 * @throws PolyvisionError `ffmpeg_not_found` naming the three places (or the bad FFMPEG_PATH).
 */
export function resolveFfmpeg(env: NodeJS.ProcessEnv = process.env): ResolvedBinary {
  return resolveBinary('ffmpeg', 'FFMPEG_PATH', ffmpegStaticPath, env);
}

/** The path of {@link resolveFfmpeg}. */
export function resolveFfmpegPath(env: NodeJS.ProcessEnv = process.env): string {
  return resolveFfmpeg(env).path;
}

/**
 * Finds ffprobe: `FFPROBE_PATH`, else an `ffprobe` beside the ffmpeg-static
 * binary (ffmpeg-static ships none, but a hand-placed one is used), else
 * `ffprobe` on `PATH`.
 *
 * @throws PolyvisionError `ffprobe_not_found`.
 */
export function resolveFfprobe(env: NodeJS.ProcessEnv = process.env): ResolvedBinary {
  const besideStatic = () => {
    const ffmpeg = ffmpegStaticPath();
    if (!ffmpeg) return undefined;
    const candidate = join(ffmpeg, '..', 'ffprobe');
    return isExecutable(candidate) ? candidate : undefined;
  };
  return resolveBinary('ffprobe', 'FFPROBE_PATH', besideStatic, env);
}

/** The path of {@link resolveFfprobe}. */
export function resolveFfprobePath(env: NodeJS.ProcessEnv = process.env): string {
  return resolveFfprobe(env).path;
}
