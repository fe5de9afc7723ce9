import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { WAIT_FOR_MIN_TIMEOUT_MS } from '../../support/wait-for.ts';

/** Debian's Chromium (ENVIRONMENT.md); `CHROMIUM_PATH` overrides. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Flags for a headless, offline, quiet Chromium on the CI hosts (ENVIRONMENT.md, "Chromium"). */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A Chromium with a fresh profile; `close()` ends the browser process and deletes the profile. */
export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

/**
 * Starts Chromium through playwright-core with a fresh `--user-data-dir`
 * (playwright passes the folder of `launchPersistentContext` as that flag).
 *
 * @param viewport - the page size in CSS pixels. @defaultValue 1440×1000
 */
export async function launchChromium(viewport = { width: 1440, height: 1000 }): Promise<TestBrowser> {
  const profile = await mkdtemp(join(tmpdir(), 'pv-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport,
    deviceScaleFactor: 1,
    colorScheme: 'dark',
    timeout: WAIT_FOR_MIN_TIMEOUT_MS,
  });
  // Waits are hang guards, not speed checks: a loaded host may take long to render.
  context.setDefaultTimeout(WAIT_FOR_MIN_TIMEOUT_MS);
  context.setDefaultNavigationTimeout(WAIT_FOR_MIN_TIMEOUT_MS);
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      await rm(profile, { recursive: true, force: true });
    },
  };
}
