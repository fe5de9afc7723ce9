/**
 * Reservations: bytes promised before any byte moves. Offers the
 * {@link ReservationLedger} (never oversubscribes, survives restarts through
 * an atomic JSON snapshot) and the {@link SnapshotFile} it persists with.
 */
export * from './ledger.ts';
export * from './reservation.ts';
export * from './snapshot-file.ts';
