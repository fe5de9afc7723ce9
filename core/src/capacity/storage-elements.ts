import { readFileSync } from 'node:fs';
import { ConfigError, safeId } from '@polyvision/shared';
import { z } from 'zod';

/** One configured storage element (`STORAGE_ELEMENTS` entry). */
export interface StorageElementConfig {
  storage_id: string;
  /** Base URL of the SE API, without `/api/v1`. */
  endpoint: string;
  /** Bearer token toward this SE (one of its `STORAGE_TOKENS`). */
  token: string;
  /** Datacenter name, for affinity. */
  location: string;
  /** Where the SE's datacenter is drawn on the ops capacity map: `{lat, lon}` in degrees or `{x, y}` on a free plane. Optional. */
  coordinates?: { lat: number; lon: number } | { x: number; y: number };
}

export const storageElementConfigSchema = z.object({
  storage_id: safeId,
  endpoint: z.url({ protocol: /^https?$/, message: 'an http(s) URL' }),
  token: z.string().min(1).max(4096),
  location: z.string().min(1).max(128),
  coordinates: z
    .union([
      z.strictObject({ lat: z.number().min(-90).max(90), lon: z.number().min(-180).max(180) }),
      z.strictObject({ x: z.number(), y: z.number() }),
    ])
    .optional(),
});

const listSchema = z
  .array(storageElementConfigSchema)
  .min(1, { message: 'at least one storage element' })
  .refine((list) => new Set(list.map((se) => se.storage_id)).size === list.length, {
    message: 'storage_id values must be unique',
  });

/**
 * Parses the SE list from `STORAGE_ELEMENTS` (a JSON array of
 * `{storage_id, endpoint, token, location, coordinates?}`, coordinates
 * `{lat, lon}` or `{x, y}` for the ops map) or `STORAGE_ELEMENTS_FILE`
 * (the same JSON in a file). Trailing slashes of endpoints are removed.
 *
 * @throws ConfigError naming the variable: neither or both set, unreadable
 *   file, bad JSON, or an entry that does not match the shape.
 */
export function loadStorageElements(env: Record<string, string | undefined> = process.env): StorageElementConfig[] {
  const inline = env.STORAGE_ELEMENTS?.trim();
  const file = env.STORAGE_ELEMENTS_FILE?.trim();
  if (inline && file)
    throw new ConfigError('STORAGE_ELEMENTS', 'set STORAGE_ELEMENTS or STORAGE_ELEMENTS_FILE, not both');
  if (!inline && !file) {
    throw new ConfigError('STORAGE_ELEMENTS', 'got nothing, expected a JSON array (or STORAGE_ELEMENTS_FILE)');
  }
  const variable = inline ? 'STORAGE_ELEMENTS' : 'STORAGE_ELEMENTS_FILE';
  let text = inline ?? '';
  if (file) {
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new ConfigError(variable, `cannot read ${file}: ${(error as Error).message}`);
    }
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(variable, `not JSON: ${(error as Error).message}`);
  }
  return parseStorageElements(raw, variable);
}

/**
 * Validates an SE list already parsed from JSON.
 * @throws ConfigError (variable `variable`) with the first bad path.
 */
export function parseStorageElements(raw: unknown, variable = 'STORAGE_ELEMENTS'): StorageElementConfig[] {
  const parsed = listSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(variable, `${issue?.path.join('.') || '(root)'}: ${issue?.message}`);
  }
  return parsed.data.map((se) => ({ ...se, endpoint: se.endpoint.replace(/\/+$/, '') }));
}
