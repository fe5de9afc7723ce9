import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { StorageElementConfig as SeEntry } from '@polyvision/core';
import { PolyvisionError } from '@polyvision/shared';
import { loadStorageElementConfig, type RunningStorageElement, startStorageElement } from '@polyvision/storage-element';

/** One SE of the demo fleet. */
export interface DemoStorageElement {
  storageId: string;
  location: string;
  /** Quota of this SE, bytes. */
  capacityLimitBytes: number;
  /** The nearly full one: a neighbour fills it just before the panorama arrives. */
  nearlyFull: boolean;
  entry: SeEntry;
  running: RunningStorageElement;
}

/** The demo's fleet: 5 SEs in 3 datacenters (DESIGN.md "The main job"). */
export const DEMO_FLEET: ReadonlyArray<{ storageId: string; location: string; nearlyFull: boolean }> = [
  { storageId: 'se-1-dc-east', location: 'dc-east', nearlyFull: false },
  { storageId: 'se-2-dc-east', location: 'dc-east', nearlyFull: false },
  { storageId: 'se-3-dc-west', location: 'dc-west', nearlyFull: false },
  { storageId: 'se-4-dc-west', location: 'dc-west', nearlyFull: false },
  { storageId: 'se-5-dc-north', location: 'dc-north', nearlyFull: true },
];

/** The edge's nearest datacenter: ingest prefers it, so the first placement goes to the nearly full SE. */
export const DEMO_PREFERRED_LOCATION = 'dc-north';

/** Ops-map coordinates of the demo datacenters (degrees). */
const COORDINATES: Record<string, { lat: number; lon: number }> = {
  'dc-east': { lat: 52.52, lon: 13.4 },
  'dc-west': { lat: 48.86, lon: 2.35 },
  'dc-north': { lat: 59.33, lon: 18.07 },
};

/**
 * Starts the demo's storage elements in-process on loopback (port 0) over
 * folders under `rootDir`, each with a quota of `capacityLimitBytes`.
 *
 * @throws PolyvisionError `listen_failed`/`storage_failure` from the SE.
 */
export async function startDemoStorage(
  rootDir: string,
  capacityLimitBytes: number,
): Promise<{ token: string; elements: DemoStorageElement[]; close(): Promise<void> }> {
  const token = `demo-se-${randomBytes(12).toString('hex')}`;
  const elements: DemoStorageElement[] = [];
  try {
    for (const se of DEMO_FLEET) {
      const dataDir = join(rootDir, se.storageId);
      await mkdir(dataDir, { recursive: true });
      const config = loadStorageElementConfig({
        STORAGE_ELEMENT_ID: se.storageId,
        STORAGE_DATACENTER_LOCATION: se.location,
        STORAGE_DATA_DIR: dataDir,
        STORAGE_HOST: '127.0.0.1',
        STORAGE_PORT: '0',
        STORAGE_MODE: 'rw',
        STORAGE_TYPE: 'local',
        STORAGE_TOKENS: token,
        STORAGE_CAPACITY_LIMIT_BYTES: String(capacityLimitBytes),
      });
      const running = await startStorageElement(config);
      elements.push({
        storageId: se.storageId,
        location: se.location,
        capacityLimitBytes,
        nearlyFull: se.nearlyFull,
        running,
        entry: {
          storage_id: se.storageId,
          endpoint: running.url,
          token,
          location: se.location,
          ...(COORDINATES[se.location] ? { coordinates: COORDINATES[se.location] } : {}),
        },
      });
    }
  } catch (error) {
    await Promise.allSettled(elements.map((e) => e.running.close()));
    throw error;
  }
  return {
    token,
    elements,
    async close() {
      await Promise.allSettled(elements.map((e) => e.running.close()));
    },
  };
}

/**
 * Books all but `leaveBytes` of an SE's free space through its own reservation
 * API, as a neighbour's large upload would: the capacity cache still shows the
 * space of the monitor's last poll, but the next reservation for a bigger
 * file meets `507 insufficient_storage`.
 *
 * @returns the bytes booked.
 * @throws PolyvisionError `demo_fill_failed` when the SE refuses.
 */
export async function fillStorageElement(se: DemoStorageElement, token: string, leaveBytes: number): Promise<number> {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const capacity = await fetch(`${se.running.url}/api/v1/capacity`, { headers });
  if (!capacity.ok)
    throw new PolyvisionError('demo_fill_failed', `capacity of ${se.storageId}: HTTP ${capacity.status}`);
  const { available } = (await capacity.json()) as { available: number };
  const size = available - leaveBytes;
  if (size <= 0) return 0;
  const response = await fetch(`${se.running.url}/api/v1/reservations`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ size_bytes: size, ttl_ms: 3_600_000 }),
  });
  if (response.status !== 201) {
    throw new PolyvisionError(
      'demo_fill_failed',
      `reserving ${size} bytes on ${se.storageId}: HTTP ${response.status} ${await response.text()}`,
    );
  }
  return size;
}
