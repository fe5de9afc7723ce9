import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigError,
  describeConfigValue,
  envBool,
  envEnum,
  envInt,
  envSecondsAsMs,
  envTokenList,
  envUrl,
  loadConfig,
  parseTokenList,
  redactUserinfo,
} from '../src/index.ts';

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

describe('secrets in configuration errors', () => {
  it('never echoes a URL password, even in a malformed URL', () => {
    expect(redactUserinfo('postgres://pv:s3cret@db:5432/x')).toBe('postgres://***@db:5432/x');
    expect(redactUserinfo('postgres://pv:s3/cr#et@db host/x')).toBe('postgres://***@db host/x');
    expect(redactUserinfo('redis://:p@ss@[bad')).toBe('redis://***@[bad');
    expect(redactUserinfo('redis://localhost:6379')).toBe('redis://localhost:6379');
    const schema = z.object({ DATABASE_URL: envUrl() });
    expect(() => loadConfig(schema, { DATABASE_URL: 'postgres://pv:s3cret@db host/x' })).toThrow(ConfigError);
    try {
      loadConfig(schema, { DATABASE_URL: 'postgres://pv:s3cret@db host/x' });
    } catch (error) {
      expect((error as Error).message).toContain('DATABASE_URL');
      expect((error as Error).message).not.toContain('s3cret');
    }
  });

  it('shows only the length of a token variable', () => {
    expect(describeConfigValue('OPS_TOKENS', 'abc')).toBe('<3 characters, not shown>');
    expect(describeConfigValue('STORAGE_S3_SECRET_ACCESS_KEY', 'k')).toBe('<1 characters, not shown>');
    expect(() => parseTokenList('OPS_TOKENS', 'short-secret')).toThrow(/token #1 has 12 characters/);
    expect(() => parseTokenList('OPS_TOKENS', 'short-secret')).not.toThrow(/short-secret/);
    expect(parseTokenList('OPS_TOKENS', ' a-token-of-16-chars , ')).toEqual(['a-token-of-16-chars']);
    const schema = z.object({ METRICS_TOKENS: envTokenList() });
    expect(() => loadConfig(schema, { METRICS_TOKENS: 'tiny-secret' })).toThrow(/METRICS_TOKENS/);
    expect(() => loadConfig(schema, { METRICS_TOKENS: 'tiny-secret' })).not.toThrow(/tiny-secret/);
  });
});
