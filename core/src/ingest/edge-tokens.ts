import { createHash, randomBytes } from 'node:crypto';
import { safeId, ValidationError } from '@polyvision/shared';
import type { Queryable } from '../db/index.ts';

/** Who an accepted edge token belongs to. */
export interface EdgeIdentity {
  token_id: string;
  organization_id: string;
  edge_id: string | null;
}

/** One row of {@link listEdgeTokens}. */
export interface EdgeTokenRow extends EdgeIdentity {
  created_at: string;
  revoked_at: string | null;
}

const TOKEN_FORMAT = /^pve_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

/** SHA-256 hex of a token, the only form stored. */
export function hashEdgeToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * Creates a bearer token for an edge node of `organizationId`:
 * `pve_<token_id>_<43 chars of base64url = 256 random bits>`. Only its
 * SHA-256 is stored; the token itself is returned once.
 *
 * @throws ValidationError `invalid_organization` / `invalid_edge_id` for ids that are not safe ids.
 */
export async function createEdgeToken(
  db: Queryable,
  organizationId: string,
  edgeId?: string,
): Promise<{ token: string; token_id: string }> {
  if (!safeId.safeParse(organizationId).success) {
    throw new ValidationError('invalid_organization', `organization "${organizationId}" is not a valid id`);
  }
  if (edgeId !== undefined && !safeId.safeParse(edgeId).success) {
    throw new ValidationError('invalid_edge_id', `edge id "${edgeId}" is not a valid id`);
  }
  const tokenId = randomBytes(8).toString('hex');
  const token = `pve_${tokenId}_${randomBytes(32).toString('base64url')}`;
  await db.query('INSERT INTO edge_tokens (token_id, organization_id, edge_id, token_sha256) VALUES ($1, $2, $3, $4)', [
    tokenId,
    organizationId,
    edgeId ?? null,
    hashEdgeToken(token),
  ]);
  return { token, token_id: tokenId };
}

/** The identity of a live (not revoked) token, or null. Malformed tokens are null without a query. */
export async function verifyEdgeToken(db: Queryable, token: string): Promise<EdgeIdentity | null> {
  if (!TOKEN_FORMAT.test(token)) return null;
  const { rows } = await db.query<EdgeIdentity>(
    'SELECT token_id, organization_id, edge_id FROM edge_tokens WHERE token_sha256 = $1 AND revoked_at IS NULL',
    [hashEdgeToken(token)],
  );
  return rows[0] ?? null;
}

/** Tokens (never their secret), newest first, optionally of one organization. */
export async function listEdgeTokens(db: Queryable, organizationId?: string): Promise<EdgeTokenRow[]> {
  const { rows } = await db.query<{
    token_id: string;
    organization_id: string;
    edge_id: string | null;
    created_at: Date | string;
    revoked_at: Date | string | null;
  }>(
    `SELECT token_id, organization_id, edge_id, created_at, revoked_at FROM edge_tokens
     WHERE $1::text IS NULL OR organization_id = $1 ORDER BY created_at DESC, token_id`,
    [organizationId ?? null],
  );
  return rows.map((r) => ({
    ...r,
    created_at: new Date(r.created_at).toISOString(),
    revoked_at: r.revoked_at === null ? null : new Date(r.revoked_at).toISOString(),
  }));
}

/** Revokes a token by id. @returns false when no live token has that id. */
export async function revokeEdgeToken(db: Queryable, tokenId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    'UPDATE edge_tokens SET revoked_at = now() WHERE token_id = $1 AND revoked_at IS NULL',
    [tokenId],
  );
  return rowCount === 1;
}
