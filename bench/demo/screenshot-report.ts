/**
 * Screenshots a demo report with headless Chromium (playwright-core, Debian's
 * /usr/bin/chromium): `node bench/demo/screenshot-report.ts out/<match>/report.html shot.png`.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { launchChromium } from '../../test/browser/support/chromium.ts';

const [report, png] = process.argv.slice(2);
if (!report || !png) {
  process.stderr.write('usage: node bench/demo/screenshot-report.ts <report.html> <out.png>\n');
  process.exit(2);
}
const browser = await launchChromium({ width: 1200, height: 900 });
try {
  const page = await browser.context.newPage();
  await page.goto(pathToFileURL(resolve(report)).href, { waitUntil: 'load' });
  await page.screenshot({ path: png, fullPage: true });
  process.stdout.write(`${png}\n`);
} finally {
  await browser.close();
}
