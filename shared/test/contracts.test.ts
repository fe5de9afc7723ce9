import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  capacityReportSchema,
  errorBodySchema,
  formatTusMetadata,
  insufficientStorageBodySchema,
  JOB_TOPIC_PARTITIONS,
  jobCommandSchema,
  jobEventSchema,
  jobKey,
  objectKeySchema,
  parseTusMetadata,
  reservationRequestSchema,
  reservationResponseSchema,
  STAGES,
  safeId,
  stageIdempotencyKey,
  stageTaskSchema,
  TOPICS,
  taskTopic,
  uploadMetadataSchema,
} from '../src/index.ts';

const now = '2026-11-20T23:00:00.000Z';
const sha = 'a'.repeat(64);
const report = {
  storage_id: 'se-dc1-01',
  mode: 'rw',
  total: 1_000,
  used: 400,
  available: 550,
  reserved: 50,
  percent_used: 40,
  health: 'healthy',
  backend: 'local',
  location: 'dc1',
  endpoint: 'http://127.0.0.1:9001',
  last_update: now,
};
const envelope = {
  message_id: randomUUID(),
  job_id: 'job-1',
  organization_id: 'acme',
  match_id: 'm-42',
  created_at: now,
};
const artifact = {
  kind: 'panorama',
  storage_id: 'se-1',
  object_key: 'acme/m-42/panorama.mp4',
  size_bytes: 10,
  sha256: sha,
};

describe('safeId', () => {
  it('accepts ordinary ids and refuses anything that could escape a path', () => {
    for (const ok of ['a', 'se-dc1_01', 'match.2026-11-20', 'x'.repeat(128)])
      expect(safeId.safeParse(ok).success).toBe(true);
    for (const bad of ['', '..', 'a..b', '../etc', 'a/b', '.hidden', 'x'.repeat(129), 'a b', 'é', 'a\\b', 'a\0']) {
      expect(safeId.safeParse(bad).success, bad).toBe(false);
    }
  });

  it('builds object keys only from safe segments', () => {
    expect(objectKeySchema.safeParse('acme/m-42/panorama.mp4').success).toBe(true);
    for (const bad of ['/abs', 'a//b', 'a/../b', 'a/', ''])
      expect(objectKeySchema.safeParse(bad).success, bad).toBe(false);
  });
});

describe('capacity report', () => {
  it('accepts a valid report and refuses available or used above total', () => {
    expect(capacityReportSchema.parse(report)).toEqual(report);
    expect(capacityReportSchema.safeParse({ ...report, available: 1_001 }).error?.issues[0]?.path).toEqual([
      'available',
    ]);
    expect(capacityReportSchema.safeParse({ ...report, used: 1_001 }).error?.issues[0]?.path).toEqual(['used']);
  });

  it('refuses negative, fractional and unsafe sizes, bad enums and bad dates', () => {
    for (const patch of [
      { total: -1 },
      { used: 1.5 },
      { total: 2 ** 53 },
      { mode: 'wo' },
      { health: 'ok' },
      { backend: 'nfs' },
      { last_update: 'yesterday' },
      { storage_id: '../x' },
      { endpoint: 'not a url' },
    ]) {
      expect(capacityReportSchema.safeParse({ ...report, ...patch }).success, JSON.stringify(patch)).toBe(false);
    }
  });
});

describe('reservations and error bodies', () => {
  it('validates requests, responses and the 507 body', () => {
    expect(reservationRequestSchema.parse({ size_bytes: 5 })).toEqual({ size_bytes: 5 });
    expect(reservationRequestSchema.safeParse({ size_bytes: 0 }).success).toBe(false);
    expect(reservationRequestSchema.safeParse({ size_bytes: 5, ttl_ms: 0 }).success).toBe(false);
    expect(reservationResponseSchema.parse({ reservation_id: 'r-1', expires_at: now }).reservation_id).toBe('r-1');
    const full = { code: 'insufficient_storage', message: 'full', available: 3, requested: 9 };
    expect(insufficientStorageBodySchema.parse(full)).toEqual(full);
    expect(insufficientStorageBodySchema.safeParse({ ...full, code: 'other' }).success).toBe(false);
    expect(errorBodySchema.parse({ code: 'x', message: 'y', extra: 1 })).toEqual({ code: 'x', message: 'y', extra: 1 });
    expect(errorBodySchema.safeParse({ message: 'y' }).success).toBe(false);
  });
});

describe('job messages', () => {
  it('parses each command type through the discriminated union', () => {
    const messages = [
      { type: 'job.submit', ...envelope, inputs: [artifact] },
      { type: 'job.reprocess', ...envelope, from_stage: 'detect', model_versions: { detect: 'v2' } },
      { type: 'job.cancel', ...envelope, reason: 'operator' },
      { type: 'stage.progress', ...envelope, stage: 'track', attempt: 1, worker_id: 'w1', progress: 0.5 },
      {
        type: 'stage.completed',
        ...envelope,
        stage: 'encode',
        attempt: 2,
        worker_id: 'w1',
        model_version: 'default',
        outputs: [artifact],
        duration_ms: 1200,
      },
      {
        type: 'stage.failed',
        ...envelope,
        stage: 'detect',
        attempt: 1,
        worker_id: 'w2',
        error: { code: 'model_missing', message: 'no weights', retriable: false },
      },
    ];
    expect(messages.map((m) => jobCommandSchema.parse(m).type)).toEqual([
      'job.submit',
      'job.reprocess',
      'job.cancel',
      'stage.progress',
      'stage.completed',
      'stage.failed',
    ]);
    const submit = jobCommandSchema.parse(messages[0]);
    expect(submit.type === 'job.submit' && submit.priority).toBe('normal');
  });

  it('refuses unknown types, bad ids, bad stages and out-of-range progress', () => {
    expect(jobCommandSchema.safeParse({ type: 'job.explode', ...envelope }).success).toBe(false);
    expect(jobCommandSchema.safeParse({ type: 'job.cancel', ...envelope, message_id: 'nope' }).success).toBe(false);
    expect(jobCommandSchema.safeParse({ type: 'job.cancel', ...envelope, match_id: '../m' }).success).toBe(false);
    const progress = { type: 'stage.progress', ...envelope, stage: 'track', attempt: 1, worker_id: 'w' };
    expect(jobCommandSchema.safeParse({ ...progress, progress: 1.5 }).success).toBe(false);
    expect(jobCommandSchema.safeParse({ ...progress, stage: 'blur', progress: 0.1 }).success).toBe(false);
    expect(jobCommandSchema.safeParse({ type: 'job.submit', ...envelope, inputs: [] }).success).toBe(false);
  });

  it('validates stage tasks and job events', () => {
    const task = stageTaskSchema.parse({
      type: 'stage.task',
      ...envelope,
      stage: 'detect',
      attempt: 1,
      model_version: 'yolo-1',
      inputs: [artifact],
    });
    expect(task.params).toEqual({});
    expect(jobEventSchema.parse({ type: 'job.event', ...envelope, status: 'running', stage: 'detect' }).status).toBe(
      'running',
    );
    expect(jobEventSchema.safeParse({ type: 'job.event', ...envelope, status: 'exploded' }).success).toBe(false);
  });
});

describe('topics and keys', () => {
  it('names topics, keys and idempotency keys as DESIGN.md says', () => {
    expect(TOPICS.jobCommands).toBe('polyvision.jobs.commands');
    expect(JOB_TOPIC_PARTITIONS).toBe(12);
    expect(taskTopic('vcam')).toBe('polyvision.tasks.vcam');
    expect(jobKey('acme', 'm-42')).toBe('acme:m-42');
    expect(stageIdempotencyKey('detect', 'acme', 'm-42', 'yolo-1')).toBe('detect:acme:m-42:yolo-1');
    expect(STAGES).toEqual(['stitch', 'detect', 'track', 'vcam', 'analyze', 'encode']);
  });
});

describe('tus Upload-Metadata', () => {
  it('round-trips metadata and validates it', () => {
    const metadata = { organization_id: 'acme', match_id: 'm-42', kind: 'panorama', filename: 'pano.mp4', sha256: sha };
    const header = formatTusMetadata(metadata);
    expect(header).toMatch(/^organization_id YWNtZQ==,/);
    expect(uploadMetadataSchema.parse(parseTusMetadata(header))).toEqual(metadata);
    expect(uploadMetadataSchema.safeParse({ ...metadata, filename: '../../etc/passwd' }).success).toBe(false);
    expect(uploadMetadataSchema.safeParse({ ...metadata, kind: 'movie' }).success).toBe(false);
    expect(uploadMetadataSchema.safeParse({ ...metadata, sha256: 'ABC' }).success).toBe(false);
  });

  it('refuses malformed headers', () => {
    expect(() => parseTusMetadata('a b c')).toThrow(/bad Upload-Metadata/);
    expect(() => parseTusMetadata('a !!!')).toThrow(/bad Upload-Metadata/);
    expect(() => parseTusMetadata('a YQ==,a Yg==')).toThrow(/repeats/);
    expect(parseTusMetadata('flag,name YQ==')).toEqual({ flag: '', name: 'a' });
  });
});
