/**
 * deploy/k8s, checked without a cluster: both overlays rendered by the real
 * kustomize, every object validated strictly (unknown fields rejected)
 * against the Kubernetes JSON schemas bundled in kubernetes-validate, then
 * what a schema cannot know: probes and graceful stops for rolling updates,
 * disruption budgets that select their pods, GPU requests, one StatefulSet
 * per datacenter with volumes, references to ConfigMaps and Secrets that
 * exist, variable names the code reads. The validators are installed once
 * from the registries (manifests-tools.ts).
 */
import { access, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { exec } from '../src/services/exec.ts';
import { repoRoot } from '../src/services/paths.ts';
import { ensureKubernetesValidate, ensureKustomize, KUBERNETES_VERSION } from './manifests-tools.ts';

/** A rendered object; spec and data are walked generically (their schemas are checked by kubernetes-validate). */
type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  // biome-ignore lint/suspicious/noExplicitAny: any spec shape
  spec?: any;
  // biome-ignore lint/suspicious/noExplicitAny: any data shape
  data?: any;
};

const k8sDir = path.join(repoRoot, 'deploy', 'k8s');
let kustomize: string;
let kubernetesValidate: string;
let scratch: string;
const rendered: Record<'dev' | 'prod', { file: string; objects: K8sObject[] }> = {} as never;

async function strictValidate(file: string): Promise<{ ok: boolean; output: string }> {
  try {
    const { stdout, stderr } = await exec(kubernetesValidate, ['--strict', '-k', KUBERNETES_VERSION, '--quiet', file], {
      timeoutMs: 120_000,
    });
    return { ok: true, output: stdout + stderr };
  } catch (error) {
    return { ok: false, output: (error as Error).message };
  }
}

function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const object = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!object) throw new Error(`no ${kind}/${name}`);
  return object;
}

beforeAll(async () => {
  [kustomize, kubernetesValidate] = await Promise.all([ensureKustomize(), ensureKubernetesValidate()]);
  scratch = await mkdtemp(path.join(tmpdir(), 'polyvision-k8s-'));
  for (const overlay of ['dev', 'prod'] as const) {
    const { stdout } = await exec(kustomize, ['build', path.join(k8sDir, 'overlays', overlay)], { timeoutMs: 60_000 });
    const file = path.join(scratch, `${overlay}.yaml`);
    await writeFile(file, stdout);
    rendered[overlay] = {
      file,
      objects: parseAllDocuments(stdout).map((d) => d.toJS() as K8sObject),
    };
  }
}, 20 * 60_000);

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe.each(['dev', 'prod'] as const)('kustomize overlay %s', (overlay) => {
  it(`every object is valid against the Kubernetes ${KUBERNETES_VERSION} schemas (strict)`, async () => {
    const result = await strictValidate(rendered[overlay].file);
    expect(result.output).not.toMatch(/error|fail/i);
    expect(result.ok, result.output).toBe(true);
    expect(rendered[overlay].objects.length).toBeGreaterThanOrEqual(16);
  });

  it('everything lands in one namespace', () => {
    const namespace = overlay === 'dev' ? 'polyvision-dev' : 'polyvision';
    for (const o of rendered[overlay].objects) {
      if (o.kind === 'Namespace') expect(o.metadata.name).toBe(namespace);
      else expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toBe(namespace);
    }
  });

  it('ingest and orchestrator roll without losing work: probes on /health/*, preStop, grace, no unavailable pod, a PDB', () => {
    const { objects } = rendered[overlay];
    for (const name of ['ingest', 'orchestrator']) {
      const deployment = find(objects, 'Deployment', name);
      expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
      expect(deployment.spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
      const pod = deployment.spec.template.spec;
      const container = pod.containers[0];
      expect(container.args[0]).toBe(name);
      expect(container.readinessProbe.httpGet.path).toBe('/health/ready');
      expect(container.livenessProbe.httpGet.path).toBe('/health/live');
      // preStop keeps serving while the endpoint removal reaches every kube-proxy and load balancer.
      const preStopSeconds = Number(container.lifecycle.preStop.exec.command[1]);
      expect(preStopSeconds).toBeGreaterThanOrEqual(5);
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(preStopSeconds + 30);
      const pdb = find(objects, 'PodDisruptionBudget', name);
      for (const [key, value] of Object.entries(pdb.spec.selector.matchLabels)) {
        expect(deployment.spec.template.metadata.labels[key], `PDB ${name} selects ${key}`).toBe(value);
      }
    }
  });

  it('one storage-element StatefulSet per datacenter, each with a volume claim and a headless Service', () => {
    const { objects } = rendered[overlay];
    const sets = objects.filter((o) => o.kind === 'StatefulSet');
    const locations = sets.map((s) => {
      const env = s.spec.template.spec.containers[0].env as { name: string; value?: string }[];
      return env.find((e) => e.name === 'STORAGE_DATACENTER_LOCATION')?.value;
    });
    expect(locations.sort()).toEqual(['dc-east', 'dc-north', 'dc-west']);
    for (const set of sets) {
      expect(set.spec.volumeClaimTemplates[0].metadata.name).toBe('data');
      expect(set.spec.template.spec.containers[0].volumeMounts).toContainEqual({ name: 'data', mountPath: '/data' });
      const service = find(objects, 'Service', set.spec.serviceName);
      expect(service.spec.clusterIP).toBe('None');
    }
  });

  it('every ConfigMap and Secret a pod refers to is rendered (prod: only the out-of-band polyvision-secrets is not)', () => {
    const { objects } = rendered[overlay];
    const names = new Set(objects.map((o) => `${o.kind}/${o.metadata.name}`));
    const referenced = new Set<string>();
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) {
        for (const item of value) walk(item);
        return;
      }
      if (value === null || typeof value !== 'object') return;
      for (const [key, inner] of Object.entries(value)) {
        const name = (inner as { name?: string })?.name;
        if (key === 'configMapRef' || key === 'configMapKeyRef') referenced.add(`ConfigMap/${name}`);
        if (key === 'secretRef' || key === 'secretKeyRef') referenced.add(`Secret/${name}`);
        walk(inner);
      }
    };
    walk(objects.filter((o) => ['Deployment', 'StatefulSet'].includes(o.kind)));
    expect(referenced.size).toBeGreaterThanOrEqual(2);
    const missing = [...referenced].filter((ref) => !names.has(ref));
    expect(missing).toEqual(overlay === 'prod' ? ['Secret/polyvision-secrets'] : []);
  });

  it('every variable given to a container is one the code reads', async () => {
    const sources: string[] = [];
    for (const pkg of ['shared', 'storage-element', 'core', 'edge', 'deploy']) {
      const root = path.join(repoRoot, pkg, 'src');
      for (const entry of await readdir(root, { recursive: true })) {
        if (entry.endsWith('.ts')) sources.push(await readFile(path.join(root, entry), 'utf8'));
      }
    }
    const code = sources.join('\n');
    const { objects } = rendered[overlay];
    const names = new Set<string>();
    for (const o of objects) {
      if (o.kind === 'ConfigMap' || o.kind === 'Secret') for (const key of Object.keys(o.data ?? {})) names.add(key);
      for (const c of o.spec?.template?.spec?.containers ?? []) for (const e of c.env ?? []) names.add(e.name);
    }
    names.delete('POD_NAME'); // only expanded into other variables
    expect(names.size).toBeGreaterThan(15);
    for (const name of names) expect(code.includes(name), `${name} is not read anywhere`).toBe(true);
  });
});

describe('overlay differences', () => {
  it('prod workers request a GPU and scale with an HPA, serve stages that have handlers; dev workers run on CPU', async () => {
    const prodWorker = find(rendered.prod.objects, 'Deployment', 'worker').spec.template.spec;
    expect(prodWorker.containers[0].resources.limits['nvidia.com/gpu']).toBe('1');
    expect(prodWorker.containers[0].image).toMatch(/-gpu$/);
    expect(prodWorker.tolerations[0].key).toBe('nvidia.com/gpu');
    const hpa = find(rendered.prod.objects, 'HorizontalPodAutoscaler', 'worker');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'worker' });
    const stages = String(prodWorker.containers[0].args[2]).split(',');
    for (const stage of stages) {
      await expect(
        access(path.join(repoRoot, 'core', 'src', 'workers', stage, 'handler.ts')),
        stage,
      ).resolves.toBeUndefined();
    }
    const devWorker = find(rendered.dev.objects, 'Deployment', 'worker').spec.template.spec;
    expect(JSON.stringify(devWorker)).not.toContain('nvidia.com/gpu');
    expect(find(rendered.prod.objects, 'Deployment', 'ingest').spec.replicas).toBe(3);
  });

  it('dev STORAGE_ELEMENTS names the StatefulSet pods by their stable DNS names', () => {
    const secret = rendered.dev.objects.find((o) => o.kind === 'Secret') as K8sObject;
    const elements = JSON.parse(Buffer.from(secret.data.STORAGE_ELEMENTS, 'base64').toString()) as {
      storage_id: string;
      endpoint: string;
      location: string;
    }[];
    const sets = rendered.dev.objects.filter((o) => o.kind === 'StatefulSet');
    expect(elements.map((e) => e.storage_id).sort()).toEqual(sets.map((s) => `${s.metadata.name}-0`).sort());
    for (const e of elements) expect(e.endpoint).toBe(`http://${e.storage_id}.${e.storage_id.replace(/-0$/, '')}:8300`);
    const tokens = Buffer.from(secret.data.STORAGE_TOKENS, 'base64').toString();
    expect(JSON.stringify(elements)).toContain(tokens);
  });

  it('the strict validator rejects an unknown field and a wrong type (it validates for real)', async () => {
    const deployment = structuredClone(find(rendered.dev.objects, 'Deployment', 'ingest'));
    deployment.spec.replica = 2; // misspelt
    const file = path.join(scratch, 'bad-field.yaml');
    await writeFile(file, stringify(deployment));
    expect((await strictValidate(file)).ok).toBe(false);
    const wrongType = structuredClone(find(rendered.dev.objects, 'Deployment', 'ingest'));
    wrongType.spec.replicas = 'two';
    await writeFile(file, stringify(wrongType));
    const result = await strictValidate(file);
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/replicas/);
  });
});
