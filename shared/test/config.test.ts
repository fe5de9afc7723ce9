import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, envBool, envEnum, envInt, envSecondsAsMs, envUrl, loadConfig } from '../src/index.ts';

const schema = z.object({
  PORT: envInt(8080, 1, 65535),
  LEADER_TTL: envSecondsAsMs(30, 1),
  ENABLED: envBool(true),
  MODE: envEnum(['rw', 'ro'] as const, 'rw'),
});

describe('loadConfig', () => {
  it('applies defaults and converts seconds to milliseconds once', () => {
    expect(loadConfig(schema, {})).toEqual({ PORT: 8080, LEADER_TTL: 30_000, ENABLED: true, MODE: 'rw' });
    expect(loadConfig(schema, { LEADER_TTL: '2.5', ENABLED: 'off', MODE: 'ro', PORT: '9' })).toEqual({
      PORT: 9,
      LEADER_TTL: 2500,
      ENABLED: false,
      MODE: 'ro',
    });
  });

  it('names the variable, the value and the expectation on a bad value', () => {
    const attempt = () => loadConfig(schema, { PORT: '70000' });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(/PORT: got "70000", expected an integer ≤ 65535/);
    expect(() => loadConfig(schema, { MODE: 'xx' })).toThrow(/MODE: got "xx", expected one of rw, ro/);
    expect(() => loadConfig(schema, { LEADER_TTL: 'soon' })).toThrow(/LEADER_TTL/);
  });

  it('says a required variable is missing in plain words', () => {
    const required = z.object({ REDIS_URL: envUrl() });
    expect(() => loadConfig(required, {})).toThrow('REDIS_URL: got nothing, expected a value: it is required');
  });
});
