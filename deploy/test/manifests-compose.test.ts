/**
 * deploy/docker-compose.yml, deploy/prometheus/prometheus.yml and the
 * Dockerfiles, checked without a Docker engine: the compose file against the
 * Compose Specification's JSON schema (ajv, draft 2020-12), then what the
 * schema cannot know — the topology, health checks and `depends_on`
 * conditions, topics, variable names the code really reads, Prometheus
 * targets; the Dockerfiles with dockerfile-utils (hadolint, a Haskell
 * binary, is not installable from the registries) and their COPY sources.
 */
import { access, cp, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { STAGES } from '@polyvision/shared';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { validate as lintDockerfile } from 'dockerfile-utils';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { exec } from '../src/services/exec.ts';
import { repoRoot } from '../src/services/paths.ts';

interface ComposeService {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  volumes?: string[];
  restart?: string;
  ports?: string[];
}
interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes: Record<string, unknown>;
  configs?: Record<string, unknown>;
}

const deployDir = path.join(repoRoot, 'deploy');

/** Every .ts source of the runtime packages, concatenated (to check variable names against). */
async function runtimeSources(): Promise<string> {
  const texts: string[] = [];
  for (const pkg of ['shared', 'storage-element', 'core', 'edge', 'deploy']) {
    const root = path.join(repoRoot, pkg, 'src');
    for (const entry of await readdir(root, { recursive: true })) {
      if (entry.endsWith('.ts')) texts.push(await readFile(path.join(root, entry), 'utf8'));
    }
  }
  return texts.join('\n');
}

function compileComposeValidator(schema: object) {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats.default(ajv);
  return ajv.compile(schema);
}

describe('docker-compose.yml', () => {
  let raw: unknown;
  let compose: ComposeFile;
  let validate: ReturnType<typeof compileComposeValidator>;

  beforeAll(async () => {
    const schema = JSON.parse(
      await readFile(path.join(deployDir, 'test', 'manifests-schemas', 'compose-spec.json'), 'utf8'),
    );
    validate = compileComposeValidator(schema);
    // YAML anchors and `<<` merge keys are resolved as docker compose does.
    raw = parse(await readFile(path.join(deployDir, 'docker-compose.yml'), 'utf8'), { merge: true });
    compose = raw as ComposeFile;
  });

  it('is valid against the Compose Specification schema', () => {
    const valid = validate(raw);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).toEqual([]);
    expect(valid).toBe(true);
  });

  it('docker-compose.dev.yml (services only) is valid too', async () => {
    const dev = parse(await readFile(path.join(deployDir, 'docker-compose.dev.yml'), 'utf8'), { merge: true });
    expect(validate(dev), JSON.stringify(validate.errors)).toBe(true);
  });

  it('the schema rejects what docker compose would reject (an unknown depends_on condition, a misspelt key)', () => {
    const broken = structuredClone(raw) as ComposeFile;
    (broken.services['ingest-1'] as ComposeService).depends_on = { redis: { condition: 'service_started_maybe' } };
    expect(validate(broken)).toBe(false);
    const misspelt = structuredClone(raw) as ComposeFile & { services: Record<string, Record<string, unknown>> };
    (misspelt.services.worker as Record<string, unknown>).enviroment = { A: 'b' };
    expect(validate(misspelt)).toBe(false);
    expect(JSON.stringify(validate.errors)).toContain('enviroment');
  });

  it('has the topology: Redpanda, Redis, PostgreSQL, 3 SEs in 3 datacenters, 2 ingest, 2 orchestrators, 1 worker, 1 edge, Prometheus', () => {
    const byCommand = (name: string) =>
      Object.entries(compose.services).filter(([, s]) => s.command?.[0] === name && s.image?.includes('polyvision'));
    const ses = byCommand('storage-element');
    expect(ses).toHaveLength(3);
    expect(new Set(ses.map(([, s]) => s.environment?.STORAGE_DATACENTER_LOCATION))).toEqual(
      new Set(['dc-east', 'dc-west', 'dc-north']),
    );
    for (const [name, se] of ses) {
      const volume = se.volumes?.[0]?.split(':')[0] as string;
      expect(Object.keys(compose.volumes), name).toContain(volume);
      expect(se.environment?.STORAGE_DATA_DIR).toBe(se.volumes?.[0]?.split(':')[1]);
    }
    expect(byCommand('ingest')).toHaveLength(2);
    expect(byCommand('orchestrator')).toHaveLength(2);
    expect(byCommand('worker')).toHaveLength(1);
    expect(byCommand('edge')).toHaveLength(1);
    for (const name of ['redpanda', 'topics', 'redis', 'postgres', 'prometheus'])
      expect(compose.services).toHaveProperty(name);
  });

  it('every long-running service has a health check; depends_on names existing services with the right condition', () => {
    const oneShot = new Set(
      Object.entries(compose.services)
        .filter(([, s]) => s.restart === 'no')
        .map(([name]) => name),
    );
    expect(oneShot).toEqual(new Set(['topics', 'synthetic-match', 'edge-setup']));
    for (const [name, service] of Object.entries(compose.services)) {
      if (!oneShot.has(name) && name !== 'worker')
        expect(service.healthcheck, `${name} has no healthcheck`).toBeDefined();
      for (const [target, { condition }] of Object.entries(service.depends_on ?? {})) {
        const dependency = compose.services[target];
        expect(dependency, `${name} depends on unknown ${target}`).toBeDefined();
        const expected = oneShot.has(target) ? 'service_completed_successfully' : 'service_healthy';
        expect(condition, `${name} → ${target}`).toBe(expected);
      }
    }
    // Nothing that talks to Kafka starts before the topics exist.
    for (const [name, service] of Object.entries(compose.services)) {
      if (service.environment?.KAFKA_BROKERS && name !== 'edge-setup') {
        const reaches = (n: string, seen = new Set<string>()): boolean =>
          n === 'topics' ||
          Object.keys(compose.services[n]?.depends_on ?? {}).some((d) => !seen.has(d) && reaches(d, seen.add(d)));
        expect(reaches(name), `${name} does not wait for topics`).toBe(true);
      }
    }
  });

  it('the worker serves only stages that have a handler module (else it exits at start)', async () => {
    const stages = compose.services.worker?.command?.[2]?.split(',') ?? [];
    expect(stages.length).toBeGreaterThan(0);
    for (const stage of stages) {
      expect(STAGES as readonly string[]).toContain(stage);
      await expect(
        access(path.join(repoRoot, 'core', 'src', 'workers', stage, 'handler.ts')),
        stage,
      ).resolves.toBeUndefined();
    }
  });

  it('the topic creator makes polyvision.jobs.commands with 12 partitions and the task, events and DLQ topics', () => {
    const script = compose.services.topics?.command?.join('\n') ?? '';
    expect(script).toMatch(/create polyvision\.jobs\.commands 12\b/);
    const loop = /for stage in ([a-z ]+); do create "polyvision\.tasks\.\$\$stage"/.exec(script);
    expect(loop?.[1]?.trim().split(' ').sort()).toEqual([...STAGES].sort());
    expect(script).toContain('create polyvision.jobs.events');
    expect(script).toContain('create polyvision.dlq');
  });

  it('every variable given to a Polyvision service is one the code reads', async () => {
    const sources = await runtimeSources();
    const names = new Set<string>();
    for (const service of Object.values(compose.services)) {
      if (!service.image?.includes('polyvision')) continue;
      for (const name of Object.keys(service.environment ?? {})) names.add(name);
    }
    expect(names.size).toBeGreaterThan(20);
    for (const name of names) expect(sources.includes(name), `${name} is not read anywhere`).toBe(true);
  });

  it('Prometheus scrapes the /metrics of every SE, ingest, orchestrator and edge service, with the SE token', async () => {
    const prometheus = parse(await readFile(path.join(deployDir, 'prometheus', 'prometheus.yml'), 'utf8')) as {
      scrape_configs: {
        job_name: string;
        authorization?: { credentials_file: string };
        static_configs: { targets: string[] }[];
      }[];
    };
    const targets = new Set(prometheus.scrape_configs.flatMap((j) => j.static_configs.flatMap((c) => c.targets)));
    const expected = new Set<string>();
    const ports: Record<string, number> = { 'storage-element': 8300, ingest: 8200, orchestrator: 8090, edge: 8088 };
    for (const [name, service] of Object.entries(compose.services)) {
      const port = ports[service.command?.[0] ?? ''];
      if (port && service.image?.includes('polyvision')) expected.add(`${name}:${port}`);
    }
    expect(expected.size).toBe(8);
    for (const target of expected) expect(targets, target).toContain(target);
    const seJob = prometheus.scrape_configs.find((j) => j.job_name === 'storage-element');
    expect(seJob?.authorization?.credentials_file).toBe('/etc/prometheus/storage-token');
    expect(JSON.stringify(compose.services.prometheus)).toContain('/etc/prometheus/storage-token');
  });
});

describe('Dockerfiles', () => {
  /** `COPY <src…> <dest>` sources (not `--from=` stage copies). */
  function copySources(dockerfile: string): string[] {
    return dockerfile
      .split('\n')
      .filter((line) => line.startsWith('COPY ') && !line.includes('--from='))
      .flatMap((line) => line.split(/\s+/).slice(1, -1));
  }

  it.each(['Dockerfile', 'Dockerfile.gpu'])(
    '%s: copies only files that exist and that .dockerignore lets through',
    async (name) => {
      const dockerfile = await readFile(path.join(deployDir, name), 'utf8');
      // .dockerignore semantics for these plain paths: the last matching line wins; `!` re-includes.
      const rules = (await readFile(path.join(repoRoot, '.dockerignore'), 'utf8'))
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l && !l.startsWith('#'))
        .map((l) => ({ include: l.startsWith('!'), pattern: l.replace(/^!/, '').replace(/^\*\*\//, '') }));
      const excluded = (source: string) => {
        let result = false;
        for (const { include, pattern } of rules) {
          if (source === pattern || source.startsWith(`${pattern}/`)) result = !include;
        }
        return result;
      };
      expect(excluded('test/support/index.ts')).toBe(true);
      const sources = copySources(dockerfile);
      expect(sources.length).toBeGreaterThan(8);
      for (const source of sources) {
        await expect(
          readFile(path.join(repoRoot, source)).catch((e) => e.code),
          source,
        ).resolves.not.toBe('ENOENT');
        expect(excluded(source), `${source} is excluded by .dockerignore`).toBe(false);
      }
    },
  );

  it.each(['Dockerfile', 'Dockerfile.gpu'])(
    "%s: no diagnostics from dockerfile-utils (the Docker language server's validator)",
    async (name) => {
      const diagnostics = await lintDockerfile(await readFile(path.join(deployDir, name), 'utf8'));
      expect(diagnostics.map((d) => `${d.range.start.line + 1}: ${d.message}`)).toEqual([]);
    },
  );

  it('the GPU image runs the detector with flip test-time augmentation, the CPU image with one pass', async () => {
    const gpu = await readFile(path.join(deployDir, 'Dockerfile.gpu'), 'utf8');
    const cpu = await readFile(path.join(deployDir, 'Dockerfile'), 'utf8');
    expect(gpu).toMatch(/^\s+DETECT_TTA=flip \\$/m);
    expect(cpu).not.toContain('DETECT_TTA');
  });

  it('dockerfile-utils reports a broken Dockerfile (it validates for real)', async () => {
    const diagnostics = await lintDockerfile('FROM node:24\nRUNN echo\nEXPOSE abc\nUSER\n');
    expect(diagnostics.map((d) => d.message)).toEqual([
      'Unknown instruction: RUNN',
      'Invalid containerPort: abc',
      'Instruction has no arguments',
    ]);
  });

  it('the image runs the CLI as a non-root user, on Node 24 with Debian ffmpeg, without the onnxruntime download', async () => {
    const dockerfile = await readFile(path.join(deployDir, 'Dockerfile'), 'utf8');
    expect(dockerfile).toContain('ARG NODE_IMAGE=node:24-bookworm-slim');
    expect(dockerfile).toMatch(/apt-get install -y --no-install-recommends ffmpeg/);
    expect(dockerfile).toContain('ONNXRUNTIME_NODE_INSTALL=skip');
    expect(dockerfile).toContain('pnpm install --prod --frozen-lockfile --filter "@polyvision/deploy..."');
    const users = [...dockerfile.matchAll(/^USER (\S+)/gm)].map((m) => m[1]);
    expect(users.at(-1)).toBe('node');
    expect(dockerfile).toContain('ENTRYPOINT ["/usr/bin/tini", "--", "node", "deploy/src/cli/main.ts"]');
  });

  it('the image layout works: the deps stage install and the runtime COPYs, replayed in a folder, run every service command', async () => {
    const dockerfile = await readFile(path.join(deployDir, 'Dockerfile'), 'utf8');
    const stages = dockerfile.split(/^FROM /m).slice(1);
    const deps = stages.find((stage) => /^\S+ AS deps$/m.test(stage)) as string;
    const runtime = stages.find((stage) => /^\S+ AS runtime$/m.test(stage)) as string;
    const app = await mkdtemp(path.join(tmpdir(), 'polyvision-image-'));
    /** `COPY <src…> <dest>` with Docker's rules for files into a `dir/` and folders onto a path. */
    const replayCopies = async (stage: string) => {
      for (const line of stage.split('\n').filter((l) => l.startsWith('COPY ') && !l.includes('--from='))) {
        const parts = line.split(/\s+/).slice(1);
        const dest = parts.pop() as string;
        for (const source of parts) {
          const target = dest.endsWith('/') ? path.join(app, dest, path.basename(source)) : path.join(app, dest);
          await mkdir(path.dirname(target), { recursive: true });
          await cp(path.join(repoRoot, source), target, { recursive: true });
        }
      }
    };
    try {
      await replayCopies(deps);
      const install =
        /pnpm install (.+)$/m
          .exec(deps)?.[1]
          ?.split(/\s+/)
          .map((a) => a.replaceAll('"', '')) ?? [];
      expect(install).toContain('--frozen-lockfile');
      // The same install, from the local pnpm store (no registry needed when the checkout is installed).
      await exec('pnpm', ['install', ...install, '--prefer-offline'], {
        cwd: app,
        env: { ...process.env, CI: '1', ONNXRUNTIME_NODE_INSTALL: 'skip' },
        timeoutMs: 300_000,
      });
      await replayCopies(runtime);
      const cli = path.join(app, 'deploy', 'src', 'cli', 'main.ts');
      for (const command of ['storage-element', 'ingest', 'orchestrator', 'worker', 'edge', 'synth-match', 'jobs']) {
        const { stdout } = await exec(process.execPath, [cli, command, '--help'], { cwd: app, timeoutMs: 60_000 });
        expect(stdout, command).toContain('Usage');
      }
      // Nothing resolves outside the replayed image: no module came from the checkout.
      const { stdout } = await exec(
        process.execPath,
        ['--input-type=module', '-e', "console.log(import.meta.resolve('@polyvision/core'))"],
        { cwd: path.join(app, 'deploy'), timeoutMs: 60_000 },
      );
      expect(stdout.trim()).toBe(`file://${path.join(app, 'core', 'src', 'index.ts')}`);
    } finally {
      await rm(app, { recursive: true, force: true });
    }
  }, 300_000);
});
