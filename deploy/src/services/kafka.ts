import { access, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PolyvisionError } from '@polyvision/shared';
import { Kafka, logLevel } from 'kafkajs';
import { aptInstall } from './apt.ts';
import { isAlive, readPidFile, spawnDaemon } from './daemon.ts';
import { commandExists, exec } from './exec.ts';
import { newKafkaClusterId } from './kafka-cluster-id.ts';
import { type ManagedSpec, stopManaged, upManaged } from './managed.ts';
import type { ServicesOptions } from './options.ts';
import { templatesDir } from './paths.ts';
import { type RoundTrip, timeRoundTrip } from './round-trip.ts';
import type { LocalService } from './service.ts';
import { renderTemplate } from './template.ts';

const pomFile = path.join(templatesDir, 'kafka', 'pom.xml');

/** `127.0.0.1:<port>` (KAFKA_BROKERS is a comma-separated host:port list). */
function url(options: Readonly<ServicesOptions>): string {
  return `127.0.0.1:${options.kafkaPort}`;
}

/** One metadata request (kafkajs admin `describeCluster`) on a fresh connection, no retries. */
export function pingKafka(brokers: string, timeoutMs: number): Promise<RoundTrip> {
  return timeRoundTrip(async () => {
    const kafka = new Kafka({
      clientId: 'polyvision-services-status',
      brokers: brokers.split(','),
      connectionTimeout: timeoutMs,
      requestTimeout: timeoutMs,
      retry: { retries: 0 },
      logLevel: logLevel.NOTHING,
    });
    const admin = kafka.admin();
    try {
      await admin.connect();
      const cluster = await admin.describeCluster();
      return `cluster ${cluster.clusterId}, ${cluster.brokers.length} broker(s), controller ${cluster.controller}`;
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }, timeoutMs);
}

/** The Kafka version pinned in deploy/services/kafka/pom.xml (`<kafka.version>`). */
export async function kafkaVersion(): Promise<string> {
  const pom = await readFile(pomFile, 'utf8');
  const version = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pom)?.[1];
  if (!version) throw new PolyvisionError('services_template_invalid', `${pomFile} has no <kafka.version>`);
  return version;
}

/** Where the broker's jars are cached: `<cache>/kafka-<version>/libs`. */
async function libsDir(options: Readonly<ServicesOptions>): Promise<string> {
  return path.join(options.cacheDir, `kafka-${await kafkaVersion()}`, 'libs');
}

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

/** The major version printed by `<java> -version` (e.g. 17), or 0 when it cannot run. */
async function javaMajor(java: string): Promise<number> {
  try {
    const { stderr, stdout } = await exec(java, ['-version'], { timeoutMs: 30_000 });
    const match = /version "(\d+)(?:\.(\d+))?/.exec(stderr + stdout);
    if (!match) return 0;
    const major = Number(match[1]);
    return major === 1 ? Number(match[2]) : major; // "1.8.0" is Java 8
  } catch {
    return 0;
  }
}

/**
 * A Java ≥ 17 binary: `java` on PATH when new enough, else a Debian JVM under
 * /usr/lib/jvm, else null. Kafka 4.x brokers need Java 17.
 */
async function findJava(): Promise<string | null> {
  if ((await javaMajor('java')) >= 17) return 'java';
  const jvms = await readdir('/usr/lib/jvm').catch(() => [] as string[]);
  for (const jvm of jvms.sort().reverse()) {
    const candidate = path.join('/usr/lib/jvm', jvm, 'bin', 'java');
    if ((await exists(candidate)) && (await javaMajor(candidate)) >= 17) return candidate;
  }
  return null;
}

/**
 * Downloads the broker's jars once: `mvn dependency:copy-dependencies` on
 * deploy/services/kafka/pom.xml into a temp folder, renamed into place when
 * complete (an interrupted download never looks finished). The Maven
 * repository is kept in `<cache>/m2`.
 */
async function ensureJars(options: Readonly<ServicesOptions>): Promise<void> {
  const libs = await libsDir(options);
  if (await exists(libs)) return;
  if (!(await commandExists('mvn'))) await aptInstall(['maven'], options.onProgress);
  const version = await kafkaVersion();
  const temp = `${libs}.partial-${process.pid}`;
  await rm(temp, { recursive: true, force: true });
  await mkdir(path.dirname(libs), { recursive: true });
  options.onProgress(`Kafka: downloading Apache Kafka ${version} jars from Maven Central into ${libs} (once)`);
  const started = performance.now();
  await exec(
    'mvn',
    [
      '-B',
      '-q',
      '-f',
      pomFile,
      `-Dmaven.repo.local=${path.join(options.cacheDir, 'm2')}`,
      'dependency:copy-dependencies',
      `-DoutputDirectory=${temp}`,
    ],
    { timeoutMs: 900_000 },
  );
  const jars = (await readdir(temp)).filter((f) => f.endsWith('.jar'));
  if (!jars.some((f) => f.startsWith('kafka_2.13-'))) {
    throw new PolyvisionError('services_install_failed', `Maven copied no kafka_2.13 jar into ${temp}`);
  }
  let bytes = 0;
  for (const jar of jars) bytes += (await stat(path.join(temp, jar))).size;
  await rename(temp, libs);
  options.onProgress(
    `Kafka: ${jars.length} jars, ${(bytes / 1024 / 1024).toFixed(1)} MiB in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
}

/**
 * JVM flags for a test broker on a small (2-core) host: a 512 MiB heap, the
 * serial collector (no GC threads competing with the tests) and the C1 JIT
 * only, which spends less CPU while starting. Start to "Kafka Server started",
 * 3 alternating runs on the loaded build host: 4.4/3.9/4.3 s with these flags
 * against 5.2/7.2/4.6 s with G1 and the full JIT. Not production settings.
 */
const JVM_FLAGS = [
  '-Xms512m',
  '-Xmx512m',
  '-XX:+UseSerialGC',
  '-XX:TieredStopAtLevel=1',
  '-XX:+ExitOnOutOfMemoryError',
  '-Djava.awt.headless=true',
];

async function spec(options: Readonly<ServicesOptions>): Promise<ManagedSpec> {
  const dir = path.join(options.workDir, 'kafka');
  const data = path.join(dir, 'data');
  const logFile = path.join(dir, 'kafka.log');
  const pidFile = path.join(dir, 'kafka.pid');
  return {
    label: 'Kafka',
    pidFile,
    logFile,
    port: options.kafkaPort,
    portVariable: 'POLYVISION_KAFKA_PORT',
    ping: (timeoutMs) => pingKafka(url(options), timeoutMs),
    start: async () => {
      const java = await findJava();
      if (!java)
        throw new PolyvisionError('services_package_missing', 'no Java 17 or newer (needed by the Kafka 4.x broker)');
      const classPath = `${await libsDir(options)}/*`;
      await mkdir(dir, { recursive: true });
      const config = path.join(dir, 'server.properties');
      await renderTemplate(path.join(templatesDir, 'kafka', 'server.properties.template'), config, {
        PORT: options.kafkaPort,
        CONTROLLER_PORT: options.kafkaControllerPort,
        DATA_DIR: data,
      });
      await formatStorage(options, java, classPath, config, data);
      return spawnDaemon({
        command: java,
        args: [
          ...JVM_FLAGS,
          `-Dlog4j2.configurationFile=${path.join(templatesDir, 'kafka', 'log4j2.properties')}`,
          `-Dkafka.logs.dir=${dir}`,
          '-cp',
          classPath,
          'kafka.Kafka',
          config,
        ],
        cwd: dir,
        logFile,
        pidFile,
      });
    },
    readyTimeoutMs: 120_000,
    stopGraceMs: 30_000,
    onProgress: options.onProgress,
  };
}

/**
 * Formats the KRaft storage once (`kafka.tools.StorageTool format
 * --standalone`, the 4.x way to make a single-voter controller quorum). The
 * controller's address is written into the metadata at format time, so when
 * the ports change the (disposable) data is wiped and formatted again.
 */
async function formatStorage(
  options: Readonly<ServicesOptions>,
  java: string,
  classPath: string,
  config: string,
  data: string,
): Promise<void> {
  const stampFile = path.join(path.dirname(data), 'formatted-for.json');
  const stamp = JSON.stringify({ port: options.kafkaPort, controllerPort: options.kafkaControllerPort });
  const previous = await readFile(stampFile, 'utf8').catch(() => null);
  if (previous === stamp && (await exists(path.join(data, 'meta.properties')))) return;
  if (previous !== null) options.onProgress('Kafka: ports changed since the storage was formatted; wiping its data');
  await rm(data, { recursive: true, force: true });
  const clusterId = newKafkaClusterId();
  options.onProgress(`Kafka: formatting KRaft storage (cluster ${clusterId})`);
  await exec(
    java,
    [
      `-Dlog4j2.configurationFile=${path.join(templatesDir, 'kafka', 'log4j2.properties')}`,
      '-cp',
      classPath,
      'kafka.tools.StorageTool',
      'format',
      '--standalone',
      `--cluster-id=${clusterId}`,
      '-c',
      config,
    ],
    { timeoutMs: 120_000 },
  );
  await writeFile(stampFile, stamp);
}

/**
 * Makes a fresh broker create its `__consumer_offsets` topic now: a
 * FindCoordinator request (through kafkajs `describeGroups`) is answered
 * COORDINATOR_NOT_AVAILABLE until that topic exists, and kafkajs retries.
 * Otherwise the first test that joins a consumer group pays for it (seconds on
 * a busy 2-core host).
 *
 * @throws PolyvisionError `services_start_failed` when the coordinator is not ready within 60 s.
 */
async function warmGroupCoordinator(options: Readonly<ServicesOptions>): Promise<void> {
  const started = performance.now();
  const kafka = new Kafka({
    clientId: 'polyvision-services-warmup',
    brokers: [url(options)],
    logLevel: logLevel.NOTHING,
    retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 2_000 },
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    await admin.describeGroups(['polyvision-services-warmup']);
  } catch (error) {
    throw new PolyvisionError(
      'services_start_failed',
      `Kafka: the group coordinator did not become ready: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  } finally {
    await admin.disconnect().catch(() => {});
  }
  options.onProgress(`Kafka: group coordinator ready after ${Math.round(performance.now() - started)} ms`);
}

/**
 * Apache Kafka 4.x in KRaft mode (one broker+controller node), from the jars
 * on Maven Central, run with Java 17.
 */
export const kafkaService: LocalService = {
  name: 'kafka',
  envVar: 'KAFKA_BROKERS',
  url,
  async install(options) {
    if (!(await findJava())) await aptInstall(['openjdk-17-jre-headless'], options.onProgress);
    await ensureJars(options);
  },
  async up(options) {
    const outcome = await upManaged(await spec(options));
    if (outcome === 'started') await warmGroupCoordinator(options);
    return outcome;
  },
  async status(options, timeoutMs) {
    const pid = await readPidFile(path.join(options.workDir, 'kafka', 'kafka.pid'));
    const trip = await pingKafka(url(options), timeoutMs);
    return {
      name: 'kafka',
      envVar: 'KAFKA_BROKERS',
      url: url(options),
      pid: pid && (await isAlive(pid)) ? pid : null,
      ...trip,
    };
  },
  async down(options) {
    return stopManaged(await spec(options));
  },
};
