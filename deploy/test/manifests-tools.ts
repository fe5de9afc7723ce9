/**
 * The offline validators the manifest tests run, installed once from the
 * package registries into `$POLYVISION_CACHE_DIR` (default `~/.cache/polyvision`):
 *
 * - kustomize (sigs.k8s.io/kustomize/kustomize/v5, Apache-2.0), built with
 *   `go install` from the Go module proxy, renders the overlays;
 * - kubernetes-validate (PyPI, Apache-2.0), which bundles the Kubernetes
 *   OpenAPI-derived JSON schemas of every release and validates offline;
 *   `--strict` rejects unknown fields. Installed with pip into a venv.
 * - compose-spec.json (manifests-schemas/compose-spec.json) is the schema of
 *   the Compose Specification, vendored from the Go module
 *   github.com/compose-spec/compose-go/v2@v2.16.2 (schema/compose-spec.json,
 *   Apache-2.0), the library `docker compose` itself validates with.
 */
import { access, constants } from 'node:fs/promises';
import path from 'node:path';
import { aptInstall } from '../src/services/apt.ts';
import { exec } from '../src/services/exec.ts';
import { compileServicesOptions } from '../src/services/options.ts';

export const KUSTOMIZE_MODULE = 'sigs.k8s.io/kustomize/kustomize/v5';
export const KUSTOMIZE_VERSION = 'v5.5.0';
export const KUBERNETES_VALIDATE_VERSION = '1.37.0';
/** The Kubernetes release the manifests are validated against. */
export const KUBERNETES_VERSION = '1.33.0';

const executable = (file: string) =>
  access(file, constants.X_OK).then(
    () => true,
    () => false,
  );

function cacheDir(): string {
  return compileServicesOptions().cacheDir;
}

/**
 * The kustomize binary: `<cache>/bin/kustomize-<version>`, built with `go install` when missing (about 2 minutes).
 *
 * @throws PolyvisionError `services_command_failed` when Go is missing or the build fails.
 */
export async function ensureKustomize(): Promise<string> {
  const binDir = path.join(cacheDir(), 'bin', `kustomize-${KUSTOMIZE_VERSION}`);
  const binary = path.join(binDir, 'kustomize');
  if (await executable(binary)) return binary;
  await exec('go', ['install', `${KUSTOMIZE_MODULE}@${KUSTOMIZE_VERSION}`], {
    env: { ...process.env, GOBIN: binDir, GOFLAGS: '-buildvcs=false' },
    timeoutMs: 15 * 60_000,
  });
  return binary;
}

/**
 * The kubernetes-validate command: `<cache>/kubernetes-validate-<version>/bin/kubernetes-validate`,
 * installed with pip into that venv when missing (about 30 s; installs the
 * Debian package python3-venv first when `python3 -m venv` cannot work).
 *
 * @throws PolyvisionError `services_command_failed` when python3 or pip fails,
 *   `services_package_missing` when python3-venv is missing and we are not root.
 */
export async function ensureKubernetesValidate(): Promise<string> {
  const venv = path.join(cacheDir(), `kubernetes-validate-${KUBERNETES_VALIDATE_VERSION}`);
  const binary = path.join(venv, 'bin', 'kubernetes-validate');
  if (await executable(binary)) return binary;
  try {
    await exec('python3', ['-m', 'venv', venv], { timeoutMs: 120_000 });
  } catch {
    // Debian's python3 lacks ensurepip until python3-venv is installed.
    await aptInstall(['python3-venv'], () => {});
    await exec('python3', ['-m', 'venv', '--clear', venv], { timeoutMs: 120_000 });
  }
  await exec(
    path.join(venv, 'bin', 'pip'),
    ['install', '--quiet', '--disable-pip-version-check', `kubernetes-validate==${KUBERNETES_VALIDATE_VERSION}`],
    {
      timeoutMs: 10 * 60_000,
    },
  );
  return binary;
}
