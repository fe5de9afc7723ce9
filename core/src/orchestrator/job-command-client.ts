import { randomUUID } from 'node:crypto';
import {
  type ArtifactRef,
  type JobCommand,
  jobCommandSchema,
  jobKey,
  matchJobId,
  type SegmentRange,
  type Stage,
  ValidationError,
} from '@polyvision/shared';
import type { BusProducer } from '../bus/message-bus.ts';
import { topicNames } from './contracts/topics.ts';

/** Which job a command is about: its id and its partition key's parts. */
export interface JobRef {
  job_id: string;
  organization_id: string;
  match_id: string;
}

/**
 * Sends commands to `polyvision.jobs.commands` with the job's key (ingest,
 * operators' CLI, tests). Every message is validated against the shared
 * contract before it leaves.
 */
export class JobCommandClient {
  readonly #producer: BusProducer;
  readonly #topic: string;

  constructor(producer: BusProducer, topicPrefix = 'polyvision') {
    this.#producer = producer;
    this.#topic = topicNames(topicPrefix).commands;
  }

  /**
   * Submits a job.
   *
   * @returns the job id (a new UUID unless given).
   * @throws ValidationError `invalid_command` when the fields break the contract.
   */
  async submit(job: {
    job_id?: string;
    organization_id: string;
    match_id: string;
    inputs: ArtifactRef[];
    stages?: Stage[];
    model_versions?: Partial<Record<Stage, string>>;
    requested_by?: string;
  }): Promise<string> {
    const jobId = job.job_id ?? randomUUID();
    await this.send({
      ...this.#envelope({ ...job, job_id: jobId }),
      type: 'job.submit',
      priority: 'normal',
      ...job,
      job_id: jobId,
    });
    return jobId;
  }

  /** Re-runs `job` from `fromStage` with new model versions (a match job: only `segments`, when given). */
  async reprocess(
    job: JobRef,
    fromStage: Stage,
    modelVersions: Partial<Record<Stage, string>>,
    reason?: string,
    segments?: SegmentRange,
  ) {
    await this.send({
      ...this.#envelope(job),
      type: 'job.reprocess',
      from_stage: fromStage,
      model_versions: modelVersions,
      ...(reason ? { reason } : {}),
      ...(segments ? { segments } : {}),
    });
  }

  /** Cancels `job`: no more dispatch, workers abort its tasks (a match job: only `segments`, when given). */
  async cancel(job: JobRef, reason?: string, segments?: SegmentRange) {
    await this.send({
      ...this.#envelope(job),
      type: 'job.cancel',
      ...(reason ? { reason } : {}),
      ...(segments ? { segments } : {}),
    });
  }

  /**
   * A panorama segment of a match arrived (what ingest sends for an edge-named upload; tests).
   *
   * @returns the match job's id ({@link matchJobId}).
   */
  async segment(segment: {
    organization_id: string;
    match_id: string;
    slot: number;
    duration_s: number;
    input: ArtifactRef;
    stages?: Stage[];
    match_inputs?: ArtifactRef[];
  }): Promise<string> {
    const jobId = matchJobId(segment.organization_id, segment.match_id);
    await this.send({ ...this.#envelope({ ...segment, job_id: jobId }), type: 'match.segment', ...segment });
    return jobId;
  }

  /**
   * Opens a match job at the edge slot of its first segment (what ingest sends for the edge's start
   * marker; tests).
   *
   * @returns the match job's id ({@link matchJobId}).
   */
  async open(match: {
    organization_id: string;
    match_id: string;
    first_slot: number;
    stages?: Stage[];
  }): Promise<string> {
    const jobId = matchJobId(match.organization_id, match.match_id);
    await this.send({ ...this.#envelope({ ...match, job_id: jobId }), type: 'match.open', ...match });
    return jobId;
  }

  /** Ends a match job (an operator, or tests): `lastSlot` is the edge slot of its last segment, if known. */
  async end(job: JobRef, reason: 'marker' | 'operator' = 'operator', lastSlot?: number) {
    await this.send({
      ...this.#envelope(job),
      type: 'match.end',
      reason,
      ...(lastSlot === undefined ? {} : { last_slot: lastSlot }),
    });
  }

  /**
   * Sends any command (validated).
   *
   * @throws ValidationError `invalid_command`.
   */
  async send(command: unknown): Promise<JobCommand> {
    const parsed = jobCommandSchema.safeParse(command);
    if (!parsed.success) {
      throw new ValidationError(
        'invalid_command',
        parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
      );
    }
    await this.#producer.send(this.#topic, [
      { key: jobKey(parsed.data.organization_id, parsed.data.match_id), value: JSON.stringify(parsed.data) },
    ]);
    return parsed.data;
  }

  #envelope(job: JobRef) {
    return {
      message_id: randomUUID(),
      job_id: job.job_id,
      organization_id: job.organization_id,
      match_id: job.match_id,
      created_at: new Date().toISOString(),
    };
  }
}
