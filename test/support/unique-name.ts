import { randomBytes } from 'node:crypto';

/**
 * A name no other test (in this run or a concurrent one) uses: for Redis key
 * prefixes, Kafka topics and groups, temp folders. Shape:
 * `<prefix>-<base36 time>-<8 hex>`, only `[a-z0-9-]` (lowercased, other
 * characters of the prefix become `-`).
 */
export function uniqueName(prefix = 'test'): string {
  const clean = prefix.toLowerCase().replace(/[^a-z0-9-]+/g, '-');
  return `${clean}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

/**
 * Like {@link uniqueName} but a valid unquoted SQL identifier (PostgreSQL
 * schema or database name): `[a-z_][a-z0-9_]*`, at most 63 bytes.
 */
export function uniqueIdentifier(prefix = 't'): string {
  let clean = prefix.toLowerCase().replace(/[^a-z0-9_]+/g, '_');
  if (!/^[a-z_]/.test(clean)) clean = `t_${clean}`;
  return `${clean}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`.slice(0, 63);
}
