/**
 * Capacity: the `CapacityReport` of `GET /api/v1/capacity` (statfs + quota,
 * or S3 soft limit − stored bytes), corrected for reservations, bytes in
 * flight and headroom, with a stable ETag; and the free space reservations
 * are checked against.
 */
export * from './capacity-service.ts';
