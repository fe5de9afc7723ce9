import { randomUUID } from 'node:crypto';
import { type JobEvent, jobKey, type MessageError, type Stage } from '@polyvision/shared';
import type { TopicNames } from '../contracts/topics.ts';
import type { OutboxMessage } from '../outbox/outbox-writer.ts';
import type { JobRow } from './job-rows.ts';

/** What a job event is about, beyond the job's status and progress. */
export interface EventAbout {
  stage?: Stage;
  stageStatus?: NonNullable<JobEvent['stage_status']>;
  error?: MessageError;
}

/** The outbox row of a `job.event` on `polyvision.jobs.events` (progress 0..1; 1 once completed). */
export function jobEventMessage(topics: TopicNames, job: JobRow, progress: number, about: EventAbout): OutboxMessage {
  const event: JobEvent = {
    type: 'job.event',
    message_id: randomUUID(),
    job_id: job.job_id,
    organization_id: job.organization_id,
    match_id: job.match_id,
    created_at: new Date().toISOString(),
    status: job.status,
    progress: job.status === 'completed' ? 1 : progress,
    ...(about.stage ? { stage: about.stage } : {}),
    ...(about.stageStatus ? { stage_status: about.stageStatus } : {}),
    ...(about.error
      ? { error: { code: about.error.code, message: about.error.message, retriable: about.error.retriable } }
      : {}),
  };
  return {
    topic: topics.events,
    key: jobKey(job.organization_id, job.match_id),
    payload: event as unknown as Record<string, unknown>,
  };
}
