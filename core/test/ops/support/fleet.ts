import type { SeProcess } from '../../../../storage-element/test/support/se-process.ts';
import { uniqueName } from '../../../../test/support/index.ts';
import { ingestEnv, startSe, storageElementsJson } from '../../ingest/support/harness.ts';

/** Operator tokens the ops tests configure (`OPS_TOKENS`). */
export const OPS_TOKEN = 'ops-token-0123456789abcdef';
export const OTHER_OPS_TOKEN = 'ops-token-second-0123456789';

/** One SE of a test fleet: its process, id, datacenter and map coordinates. */
export interface FleetSe {
  se: SeProcess;
  id: string;
  location: string;
  coordinates: { lat: number; lon: number };
}

/** Datacenters of the test fleets, with real coordinates (Frankfurt, Amsterdam, Madrid). */
export const DATACENTERS = [
  { location: 'eu-central-fra', coordinates: { lat: 50.11, lon: 8.68 } },
  { location: 'eu-west-ams', coordinates: { lat: 52.37, lon: 4.9 } },
  { location: 'eu-south-mad', coordinates: { lat: 40.42, lon: -3.7 } },
] as const;

/**
 * Starts real storage-element processes, `capacityBytes` each
 * (`STORAGE_CAPACITY_LIMIT_BYTES`), spread over {@link DATACENTERS}.
 */
export async function startFleet(count: number, capacityBytes: number): Promise<FleetSe[]> {
  const out: FleetSe[] = [];
  for (let i = 0; i < count; i++) {
    const dc = DATACENTERS[i % DATACENTERS.length] as (typeof DATACENTERS)[number];
    const id = `se-${dc.location.split('-').pop()}-${Math.floor(i / DATACENTERS.length) + 1}`;
    const se = await startSe({
      STORAGE_ELEMENT_ID: id,
      STORAGE_DATACENTER_LOCATION: dc.location,
      STORAGE_CAPACITY_LIMIT_BYTES: String(capacityBytes),
    });
    out.push({ se, id, location: dc.location, coordinates: dc.coordinates });
  }
  return out;
}

/** The ingest environment for a fleet: fast polling (test defaults), ops enabled, isolated Redis prefix. */
export function opsIngestEnv(
  fleet: FleetSe[],
  over: { schema: string; redisPrefix: string } & Record<string, string>,
): Record<string, string> {
  const { schema, redisPrefix, ...rest } = over;
  return ingestEnv({
    DATABASE_SCHEMA: schema,
    REDIS_KEY_PREFIX: redisPrefix,
    STORAGE_ELEMENTS: storageElementsJson(fleet),
    OPS_TOKENS: `${OPS_TOKEN},${OTHER_OPS_TOKEN}`,
    OPS_REFRESH_MS: '250',
    INGEST_INSTANCE_ID: uniqueName('ingest'),
    ...rest,
  });
}

/** Reserves `sizeBytes` on an SE directly (another writer): its `reserved` grows, `available` shrinks. */
export async function reserveOn(se: SeProcess, sizeBytes: number): Promise<string> {
  const response = await se.fetch('/api/v1/reservations', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ size_bytes: sizeBytes }),
  });
  if (response.status !== 201) throw new Error(`reservation: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { reservation_id: string }).reservation_id;
}
