import type { Database } from './database.ts';
import { PgDatabase } from './drivers/pg-database.ts';
import { PgliteDatabase } from './drivers/pglite-database.ts';

/**
 * PostgreSQL through pg when `databaseUrl` is set (DATABASE_URL), otherwise
 * PGlite (in memory, or in `pgliteDataDir`) — DESIGN.md, "Embedded default".
 */
export function createDatabase(options: {
  databaseUrl?: string | undefined;
  schema?: string;
  maxConnections?: number;
  pgliteDataDir?: string;
}): Database {
  if (options.databaseUrl) {
    return new PgDatabase({
      connectionString: options.databaseUrl,
      ...(options.schema ? { schema: options.schema } : {}),
      ...(options.maxConnections ? { maxConnections: options.maxConnections } : {}),
    });
  }
  return new PgliteDatabase({
    ...(options.schema ? { schema: options.schema } : {}),
    ...(options.pgliteDataDir ? { dataDir: options.pgliteDataDir } : {}),
  });
}
