export { type AddCopyDeps, type AddCopyOptions, addCopy } from './add-copy.ts';
export * from './copies.ts';
export * from './options.ts';
export { type AuditResult, Repairer, type RepairerOptions, type ScanResult } from './repairer.ts';
export { REPAIRER_LEADER_KEY, type RepairerLeadershipOptions, startRepairerLeadership } from './repairer-leadership.ts';
export { type CopiesOutcome, Replicator } from './replicator.ts';
export { type ReplicationServiceOptions, type RunningReplication, startReplication } from './start-replication.ts';
