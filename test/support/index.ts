/**
 * Helpers for every test author (import from `test/support/index.ts`):
 * - `waitFor(condition, {timeoutMs, intervalMs})`: poll instead of sleeping; the timeout
 *   guards against hangs and is never below `WAIT_FOR_MIN_TIMEOUT_MS` (120 s) unless `exact`.
 * - `uniqueName(prefix)`, `uniqueIdentifier(prefix)`: names no concurrent test uses
 *   (Redis prefixes, Kafka topics and groups; SQL schemas and databases).
 * - `serviceUrl('REDIS_URL' | 'DATABASE_URL' | 'KAFKA_BROKERS')`: the real services
 *   (started by the global setup, global-setup.ts).
 * - `createTestRedis()`, `createTestSchema()`, `createTestDatabase()`, `createTestKafka()`:
 *   isolated, cleaned-up handles on those services; call `close()` in afterAll.
 * - `closeAll(steps)`: runs every closing step even after one failed (a test world's `close()`).
 * - `deleteKafkaPrefix(prefix)`: removes the topics and groups services made under a topic prefix.
 * - `spawnTracked()`, `stopTracked()`: child processes that the leak check
 *   (leak-check.ts, a setup file) kills and reports when a test file leaves them running.
 * - `spawnService(main, env)`: a service main as a tracked child, once it printed its
 *   `{"event":"listening","url":…}` line (storage element, ingest).
 * - `sharedAsset('models/yolox_nano.onnx')`: a reference file from `../shared/` (footage,
 *   models, datasets; absent in a plain clone), or `null` after printing one line naming the
 *   missing file and its source. Every test that reads `../shared` uses it:
 *   `const model = sharedAsset('models/yolox_nano.onnx'); describe.skipIf(!model)(…)`.
 */
export { closeAll } from './close-all.ts';
export { freePort } from './free-port.ts';
export { createTestKafka, deleteKafkaPrefix, type TestKafka } from './kafka.ts';
export { type OpenSocket, openSocketsTo, servicePorts } from './open-sockets.ts';
export { createTestDatabase, createTestSchema, type TestDatabase, type TestSchema } from './postgres.ts';
export { killTrackedChildren, type LeakedChild, spawnTracked, stopTracked } from './processes.ts';
export { createTestRedis, type TestRedis } from './redis.ts';
export { type ServiceVariable, serviceUrl } from './service-env.ts';
export { type ServiceProcess, type SpawnServiceOptions, spawnService } from './service-process.ts';
export { sharedAsset, sharedRoot } from './shared-asset.ts';
export { uniqueIdentifier, uniqueName } from './unique-name.ts';
export { WAIT_FOR_MIN_TIMEOUT_MS, type WaitForOptions, waitFor } from './wait-for.ts';
