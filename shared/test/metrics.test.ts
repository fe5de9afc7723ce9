import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import {
  createMetricsRegistry,
  getCounter,
  getGauge,
  getHistogram,
  getSummary,
  httpJson,
  metricsRoute,
  PolyvisionError,
  serve,
} from '../src/index.ts';

describe('metrics', () => {
  it('labels every metric with the service and collects process metrics', async () => {
    const registry = createMetricsRegistry({ service: 'storage-element', labels: { storage_id: 'se-1' } });
    getCounter(registry, { name: 'polyvision_uploads_total', help: 'uploads' }).inc(3);
    const text = await registry.metrics();
    expect(text).toMatch(/polyvision_uploads_total\{service="storage-element",storage_id="se-1"\} 3/);
    expect(text).toMatch(/polyvision_process_cpu_user_seconds_total/);
    const bare = createMetricsRegistry({ service: 'x', collectDefault: false });
    expect(await bare.metrics()).not.toMatch(/process_cpu/);
  });

  it('returns the same metric to two modules asking for one name', () => {
    const registry = createMetricsRegistry({ service: 't', collectDefault: false });
    const a = getCounter(registry, { name: 'jobs_total', help: 'jobs', labelNames: ['stage'] });
    const b = getCounter(registry, { name: 'jobs_total', help: 'jobs', labelNames: ['stage'] });
    expect(a).toBe(b);
    expect(getGauge(registry, { name: 'lag', help: 'l' })).toBe(getGauge(registry, { name: 'lag', help: 'l' }));
    const h = getHistogram(registry, { name: 'latency_seconds', help: 'h', buckets: [0.1, 1] });
    expect(getHistogram(registry, { name: 'latency_seconds', help: 'h' })).toBe(h);
    expect(getSummary(registry, { name: 's', help: 's' })).toBe(getSummary(registry, { name: 's', help: 's' }));
  });

  it('refuses a name already used by another metric type', () => {
    const registry = createMetricsRegistry({ service: 't', collectDefault: false });
    getCounter(registry, { name: 'things', help: 'x' });
    expect(() => getGauge(registry, { name: 'things', help: 'x' })).toThrow(PolyvisionError);
    expect(() => getGauge(registry, { name: 'things', help: 'x' })).toThrow(/another type/);
  });

  it('keeps registries of two services in one process apart', async () => {
    const a = createMetricsRegistry({ service: 'a', collectDefault: false });
    const b = createMetricsRegistry({ service: 'b', collectDefault: false });
    getCounter(a, { name: 'same_total', help: 'x' }).inc();
    getCounter(b, { name: 'same_total', help: 'x' }).inc(5);
    expect(await a.metrics()).toMatch(/same_total\{service="a"\} 1/);
    expect(await b.metrics()).toMatch(/same_total\{service="b"\} 5/);
  });

  it('serves /metrics in the text exposition format over real HTTP', async () => {
    const registry = createMetricsRegistry({ service: 'ingest', collectDefault: false });
    getHistogram(registry, { name: 'upload_seconds', help: 'upload time', buckets: [1, 5] }).observe(2);
    const app = new Hono().route('/', metricsRoute(registry));
    const running = await serve(app);
    try {
      const response = await fetch(`${running.url}/metrics`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = await response.text();
      expect(text).toMatch(/# TYPE upload_seconds histogram/);
      expect(text).toMatch(/upload_seconds_bucket\{le="5",service="ingest"\} 1/);
      await expect(httpJson(`${running.url}/metrics`)).rejects.toMatchObject({ code: 'invalid_response' });
    } finally {
      await running.close();
    }
  });
});
