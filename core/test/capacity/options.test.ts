import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@polyvision/shared';
import { describe, expect, it } from 'vitest';
import { loadCapacityMonitorSettings, loadStorageElements } from '../../src/capacity/index.ts';

describe('CAPACITY_MONITOR_* settings', () => {
  it('has the seed defaults, in ms (the leader lease as measured: 6 s, renewed every 2 s)', () => {
    expect(loadCapacityMonitorSettings({})).toMatchObject({
      enabled: true,
      leaderTtlMs: 6_000,
      leaderRenewalIntervalMs: 2_000,
      baseIntervalMs: 30_000,
      maxIntervalMs: 300_000,
      httpTimeoutMs: 15_000,
      httpRetries: 3,
      retryBaseDelayMs: 2_000,
      cacheTtlMs: 600_000,
      healthTtlMs: 600_000,
      failureThreshold: 3,
      recoveryThreshold: 2,
      idleMaxFactor: 4,
    });
    expect(loadCapacityMonitorSettings({ CAPACITY_MONITOR_IDLE_MAX_FACTOR: '1' }).idleMaxFactor).toBe(1);
    expect(() => loadCapacityMonitorSettings({ CAPACITY_MONITOR_IDLE_MAX_FACTOR: '0' })).toThrow(/IDLE_MAX_FACTOR/);
  });

  it('reads seconds (fractions too) and on/off', () => {
    const s = loadCapacityMonitorSettings({
      CAPACITY_MONITOR_ENABLED: 'off',
      CAPACITY_MONITOR_RETRY_BASE_DELAY: '0.5',
      CAPACITY_MONITOR_BASE_INTERVAL: '5',
    });
    expect(s.enabled).toBe(false);
    expect(s.retryBaseDelayMs).toBe(500);
    expect(s.baseIntervalMs).toBe(5_000);
  });

  it('names the variable of a bad value', () => {
    expect(() => loadCapacityMonitorSettings({ CAPACITY_MONITOR_HTTP_RETRIES: 'many' })).toThrow(
      /CAPACITY_MONITOR_HTTP_RETRIES: got "many"/,
    );
    expect(() => loadCapacityMonitorSettings({ CAPACITY_MONITOR_ENABLED: 'maybe' })).toThrow(ConfigError);
    expect(() =>
      loadCapacityMonitorSettings({ CAPACITY_MONITOR_BASE_INTERVAL: '60', CAPACITY_MONITOR_MAX_INTERVAL: '30' }),
    ).toThrow(/CAPACITY_MONITOR_MAX_INTERVAL/);
    expect(() => loadCapacityMonitorSettings({ CAPACITY_MONITOR_LEADER_RENEWAL_INTERVAL: '30' })).toThrow(
      /RENEWAL_INTERVAL/,
    );
    // At or past the renew deadline (2/3 of the TTL) the leader would lose its lock between renewals.
    expect(() =>
      loadCapacityMonitorSettings({
        CAPACITY_MONITOR_LEADER_TTL: '30',
        CAPACITY_MONITOR_LEADER_RENEWAL_INTERVAL: '20',
      }),
    ).toThrow(/renew deadline/);
    expect(() => loadCapacityMonitorSettings({ CAPACITY_MONITOR_LEADER_RENEWAL_INTERVAL: '4' })).toThrow(
      /renew deadline/,
    );
    expect(
      loadCapacityMonitorSettings({ CAPACITY_MONITOR_LEADER_TTL: '30', CAPACITY_MONITOR_LEADER_RENEWAL_INTERVAL: '5' })
        .leaderRenewalIntervalMs,
    ).toBe(5_000);
  });
});

describe('STORAGE_ELEMENTS', () => {
  const one = { storage_id: 'se-1', endpoint: 'http://127.0.0.1:8300/', token: 't', location: 'dc1' };

  it('parses the inline JSON and the file, trimming the endpoint slash', () => {
    expect(loadStorageElements({ STORAGE_ELEMENTS: JSON.stringify([one]) })).toEqual([
      { ...one, endpoint: 'http://127.0.0.1:8300' },
    ]);
    const file = join(mkdtempSync(join(tmpdir(), 'ses-')), 'ses.json');
    writeFileSync(file, JSON.stringify([one]));
    expect(loadStorageElements({ STORAGE_ELEMENTS_FILE: file })[0]?.storage_id).toBe('se-1');
  });

  it('refuses missing, both, bad JSON, bad entries and duplicates', () => {
    expect(() => loadStorageElements({})).toThrow(/STORAGE_ELEMENTS/);
    expect(() => loadStorageElements({ STORAGE_ELEMENTS: '[]', STORAGE_ELEMENTS_FILE: '/x' })).toThrow(/not both/);
    expect(() => loadStorageElements({ STORAGE_ELEMENTS: '[{' })).toThrow(/not JSON/);
    expect(() => loadStorageElements({ STORAGE_ELEMENTS: JSON.stringify([{ ...one, endpoint: 'ftp://x' }]) })).toThrow(
      /0\.endpoint/,
    );
    expect(() => loadStorageElements({ STORAGE_ELEMENTS: JSON.stringify([{ ...one, storage_id: '../x' }]) })).toThrow(
      /storage_id/,
    );
    expect(() => loadStorageElements({ STORAGE_ELEMENTS: JSON.stringify([one, one]) })).toThrow(/unique/);
    expect(() => loadStorageElements({ STORAGE_ELEMENTS_FILE: '/nonexistent/ses.json' })).toThrow(/cannot read/);
  });
});
