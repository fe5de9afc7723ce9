import { PolyvisionError } from '@polyvision/shared';
import { exec } from './exec.ts';

let updated = false;

/**
 * Installs Debian packages with apt-get (non-interactive, no recommends).
 * Runs `apt-get update` once per process first. Waits up to 5 minutes for
 * the dpkg lock when another install is running.
 *
 * @param packages - Debian package names, e.g. `['redis-server']`.
 * @param onProgress - receives a line per step.
 * @throws PolyvisionError `services_package_missing` when not running as root
 *   (the message gives the command to run), `services_command_failed` when apt-get fails.
 */
export async function aptInstall(packages: readonly string[], onProgress: (line: string) => void): Promise<void> {
  if (packages.length === 0) return;
  if (process.getuid?.() !== 0) {
    throw new PolyvisionError(
      'services_package_missing',
      `missing Debian package(s) ${packages.join(', ')}; install them with: sudo apt-get install -y ${packages.join(' ')}`,
    );
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const lockWait = ['-o', 'DPkg::Lock::Timeout=300'];
  if (!updated) {
    onProgress('apt-get update');
    await exec('apt-get', [...lockWait, 'update', '-qq'], { env, timeoutMs: 600_000 });
    updated = true;
  }
  onProgress(`apt-get install ${packages.join(' ')}`);
  await exec('apt-get', [...lockWait, 'install', '-y', '-qq', '--no-install-recommends', ...packages], {
    env,
    timeoutMs: 1_200_000,
  });
}
