import { loadConfig } from '@polyvision/shared';
import { detectEnvSchema, detectOptionsFromEnv } from './src/workers/detect/handler.ts';
import { Detector, runDetect } from './src/workers/detect/index.ts';

const detector = await Detector.open(await detectOptionsFromEnv(loadConfig(detectEnvSchema, {})));
for (const round of [1, 2])
  for (const cameraMotion of [false, true]) {
    const t = performance.now();
    const c = process.cpuUsage();
    const s = await runDetect({
      inputPath: process.argv[2]!,
      outputPath: '/tmp/rd.jsonl',
      detector,
      analysisFps: 10,
      cameraMotion,
    });
    const cpu = process.cpuUsage(c);
    console.log(
      round,
      cameraMotion,
      'wall',
      (performance.now() - t).toFixed(0),
      'cpu',
      ((cpu.user + cpu.system) / 1000).toFixed(0),
      s.header.cameraMotion ? JSON.stringify(s.header.cameraMotion) : '',
    );
  }
await detector.close?.();
