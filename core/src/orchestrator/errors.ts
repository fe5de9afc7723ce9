import { PolyvisionError } from '@polyvision/shared';

/**
 * Thrown inside a state transaction when this replica no longer owns the
 * job's partition (another replica claimed it with a higher epoch). The
 * transaction rolls back and the message is not committed: its new owner
 * handles it.
 */
export class PartitionFencedError extends PolyvisionError {
  constructor(partition: number, myEpoch: number, currentEpoch: number | null) {
    super(
      'partition_fenced',
      `partition ${partition} belongs to epoch ${currentEpoch ?? 'none'}, this replica holds ${myEpoch}`,
      { retriable: false, details: { partition, epoch: myEpoch, current_epoch: currentEpoch } },
    );
    this.name = 'PartitionFencedError';
  }
}

/** A message that can never be handled (malformed, unknown type, wrong key, unknown job): goes to the DLQ. */
export class PoisonMessageError extends PolyvisionError {
  constructor(code: string, message: string, cause?: unknown) {
    super(code, message, { retriable: false, cause });
    this.name = 'PoisonMessageError';
  }
}
