import { ConfigError, PolyvisionError } from '@polyvision/shared';
import type { Queryable } from '../db/index.ts';

/** Options of {@link OrganizationQuotas}. */
export interface OrganizationQuotaOptions {
  /** Quota of an organization not listed in `perOrganizationBytes`, bytes; null: unlimited. */
  defaultBytes: number | null;
  /** Quotas by organization id, bytes (overrides `defaultBytes`). */
  perOrganizationBytes: Readonly<Record<string, number>>;
  /**
   * How long an upload without progress still counts as reserved, ms: the
   * reservations' lifetime (`INGEST_RESERVATION_TTL_MS`), after which its
   * storage element has dropped it too.
   */
  reservationTtlMs: number;
  /** `Retry-After` of a refusal, ms (reservations lapse, files get deleted). */
  retryAfterMs: number;
}

/** An organization's bytes: stored (catalogued files) and reserved (uploads in progress). */
export interface OrganizationUsage {
  stored_bytes: number;
  reserved_bytes: number;
}

/**
 * Reserved plus stored bytes per organization, against a quota.
 *
 * Stored: every catalogued file of the organization (`files`: uploads and
 * stage outputs). Reserved: its uploads still `receiving` whose last progress
 * (`updated_at`, touched by every PATCH) is within the reservation lifetime
 * — an upload stranded longer holds no reservation on its SE any more and
 * no longer counts.
 */
export class OrganizationQuotas {
  readonly #o: OrganizationQuotaOptions;

  constructor(options: OrganizationQuotaOptions) {
    this.#o = options;
  }

  /** The quota of `organizationId` in bytes, or null when unlimited. */
  quotaBytes(organizationId: string): number | null {
    return this.#o.perOrganizationBytes[organizationId] ?? this.#o.defaultBytes;
  }

  /** What `organizationId` stores and holds reserved now. */
  async usage(db: Queryable, organizationId: string): Promise<OrganizationUsage> {
    const { rows } = await db.query<{ stored: string; reserved: string }>(
      `SELECT
         (SELECT coalesce(sum(size_bytes), 0) FROM files WHERE organization_id = $1)::text AS stored,
         (SELECT coalesce(sum(size_bytes), 0) FROM uploads
            WHERE organization_id = $1 AND status = 'receiving'
              AND updated_at > now() - $2::bigint * interval '1 millisecond')::text AS reserved`,
      [organizationId, this.#o.reservationTtlMs],
    );
    return { stored_bytes: Number(rows[0]?.stored ?? 0), reserved_bytes: Number(rows[0]?.reserved ?? 0) };
  }

  /**
   * Checks that `organizationId` may hold `addBytes` more.
   *
   * @throws PolyvisionError `quota_exceeded` (507, `retry_after_ms`, details
   *   `organization_id`, `quota_bytes`, `stored_bytes`, `reserved_bytes`, `requested_bytes`).
   */
  async check(db: Queryable, organizationId: string, addBytes: number): Promise<void> {
    const quota = this.quotaBytes(organizationId);
    if (quota === null) return;
    const usage = await this.usage(db, organizationId);
    if (usage.stored_bytes + usage.reserved_bytes + addBytes <= quota) return;
    throw new PolyvisionError(
      'quota_exceeded',
      `organization "${organizationId}" would exceed its quota of ${quota} bytes (stored ${usage.stored_bytes}, reserved ${usage.reserved_bytes}, requested ${addBytes})`,
      {
        httpStatus: 507,
        retriable: true,
        details: {
          organization_id: organizationId,
          quota_bytes: quota,
          ...usage,
          requested_bytes: addBytes,
          retry_after_ms: this.#o.retryAfterMs,
        },
      },
    );
  }
}

/**
 * Parses `INGEST_ORG_QUOTAS`: a JSON object `{"<organization id>": <bytes>}`.
 * @throws ConfigError `INGEST_ORG_QUOTAS` for anything else.
 */
export function parseOrganizationQuotas(raw: string | undefined): Record<string, number> {
  if (!raw) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError('INGEST_ORG_QUOTAS', 'expected a JSON object {"<organization id>": <bytes>}');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError('INGEST_ORG_QUOTAS', 'expected a JSON object {"<organization id>": <bytes>}');
  }
  const out: Record<string, number> = Object.create(null);
  for (const [org, bytes] of Object.entries(parsed)) {
    if (typeof bytes !== 'number' || !Number.isSafeInteger(bytes) || bytes < 0) {
      throw new ConfigError('INGEST_ORG_QUOTAS', `organization "${org}": expected a whole number of bytes ≥ 0`);
    }
    out[org] = bytes;
  }
  return out;
}
