import { z } from 'zod';

/**
 * Field schemas for the service connection variables every service reads
 * (DATABASE_URL, DATABASE_SCHEMA, REDIS_URL, POLYVISION_TOPIC_PREFIX), so
 * the ingest, orchestrator and worker configs accept and reject the same
 * values with the same message. Whether a URL is required is each service's
 * choice (`.optional()`).
 */

/** `DATABASE_URL`: a URL (postgres://user:pass@host:port/db). */
export function envPostgresUrl() {
  return z.string().url({ message: 'a postgres:// URL' });
}

/** `REDIS_URL`: a URL (redis://host:port[/db]). */
export function envRedisUrl() {
  return z.string().url({ message: 'a redis:// URL' });
}

/**
 * `DATABASE_SCHEMA`: an unquoted lower-case PostgreSQL identifier of at most
 * 63 bytes (NAMEDATALEN − 1, PostgreSQL docs "Identifiers and Key Words").
 * @defaultValue 'public'
 */
export function envSqlSchema() {
  return z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, { message: 'a lower-case SQL identifier' })
    .default('public');
}

/**
 * `POLYVISION_TOPIC_PREFIX`: the first part of every Kafka topic name
 * (Kafka's legal topic characters: letters, digits, ".", "_", "-").
 * @defaultValue 'polyvision'
 */
export function envTopicPrefix() {
  return z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, { message: 'letters, digits, ".", "_", "-"' })
    .default('polyvision');
}
