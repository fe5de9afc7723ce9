import { PolyvisionError, ValidationError } from '@polyvision/shared';
import type { StorageMode } from './config.ts';

/**
 * The SE's error catalogue: one factory per code, so every route answers the
 * same code with the same HTTP status. Codes are part of the public API
 * (README, "Routes").
 */
export const seErrors = {
  invalidId: (what: string, value: string) =>
    new ValidationError(
      'invalid_id',
      `${what} ${JSON.stringify(value.slice(0, 80))} is not a valid id (1–128 of A–Z a–z 0–9 . _ -, not starting with ".", no "..")`,
    ),
  invalidSize: (what: string, value: unknown) =>
    new ValidationError(
      'invalid_size',
      `${what} must be a non-negative integer number of bytes below 2^53, got ${JSON.stringify(value)}`,
    ),
  invalidRequest: (message: string) => new ValidationError('invalid_request', message),
  invalidOffset: (value: string | undefined) =>
    new ValidationError(
      'invalid_offset',
      `Upload-Offset must be a non-negative integer, got ${JSON.stringify(value ?? null)}`,
    ),
  readOnlyMode: (mode: StorageMode) =>
    new PolyvisionError('read_only_mode', `this storage element is in mode "${mode}" and refuses writes`, {
      httpStatus: 403,
      details: { mode },
    }),
  deleteNotAllowed: (mode: StorageMode) =>
    new PolyvisionError('delete_not_allowed', `deletes need mode "edit"; this storage element is in mode "${mode}"`, {
      httpStatus: 403,
      details: { mode },
    }),
  insufficientStorage: (availableBytes: number, requestedBytes: number, message?: string) =>
    new PolyvisionError(
      'insufficient_storage',
      message ?? `cannot hold ${requestedBytes} bytes: ${availableBytes} bytes available`,
      { httpStatus: 507, retriable: true, details: { available: availableBytes, requested: requestedBytes } },
    ),
  reservationExceeded: (availableBytes: number, requestedBytes: number) =>
    new PolyvisionError(
      'reservation_exceeded',
      `the body goes beyond the upload's size: ${availableBytes} bytes left, at least ${requestedBytes} sent`,
      { httpStatus: 507, details: { available: availableBytes, requested: requestedBytes } },
    ),
  reservationNotFound: (id: string) =>
    new PolyvisionError('reservation_not_found', `no reservation ${id}`, { httpStatus: 404 }),
  reservationExpired: (id: string) =>
    new PolyvisionError('reservation_expired', `reservation ${id} has expired`, { httpStatus: 410 }),
  reservationInUse: (id: string, uploadId: string) =>
    new PolyvisionError('reservation_in_use', `reservation ${id} already backs upload ${uploadId}`, {
      httpStatus: 409,
      details: { upload_id: uploadId },
    }),
  reservationTooSmall: (id: string, reservedBytes: number, requestedBytes: number) =>
    new PolyvisionError(
      'reservation_too_small',
      `reservation ${id} holds ${reservedBytes} bytes, the upload needs ${requestedBytes}`,
      { httpStatus: 409, details: { reserved: reservedBytes, requested: requestedBytes } },
    ),
  uploadNotFound: (id: string) => new PolyvisionError('upload_not_found', `no upload ${id}`, { httpStatus: 404 }),
  uploadExpired: (id: string) => new PolyvisionError('upload_expired', `upload ${id} has expired`, { httpStatus: 410 }),
  uploadBusy: (id: string) =>
    new PolyvisionError('upload_busy', `upload ${id} is being written by another request; retry shortly`, {
      httpStatus: 409,
      retriable: true,
    }),
  offsetMismatch: (expectedOffset: number, givenOffset: number) =>
    new PolyvisionError(
      'offset_mismatch',
      `Upload-Offset ${givenOffset} does not match the committed offset ${expectedOffset}`,
      {
        httpStatus: 409,
        details: { expected_offset: expectedOffset },
      },
    ),
  uploadIncomplete: (offset: number, sizeBytes: number) =>
    new PolyvisionError('upload_incomplete', `only ${offset} of ${sizeBytes} bytes have arrived`, {
      httpStatus: 409,
      details: { offset, size_bytes: sizeBytes },
    }),
  checksumMismatch: (expected: string, actual: string) =>
    new PolyvisionError(
      'checksum_mismatch',
      `sha256 ${actual} of the received bytes differs from the expected ${expected}`,
      {
        httpStatus: 422,
        details: { expected, actual },
      },
    ),
  fileExists: (id: string) =>
    new PolyvisionError('file_exists', `file ${id} already exists or is being uploaded`, { httpStatus: 409 }),
  fileNotFound: (id: string) => new PolyvisionError('file_not_found', `no file ${id}`, { httpStatus: 404 }),
  storageFailure: (message: string, cause: unknown) =>
    new PolyvisionError('storage_failure', message, { httpStatus: 503, retriable: true, cause }),
};
