import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Debian's Chromium (package `chromium`); .ci/run installs it when it can. */
const DEBIAN_CHROMIUM = '/usr/bin/chromium';

/** Flags for a headless Chromium as root on a machine with no outside network (nothing to reach for). */
const QUIET = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

/**
 * Chromium for the browser tests: Debian's /usr/bin/chromium when present, otherwise the one
 * inside the `@sparticuz/chromium` npm package (unpacked to /tmp on first use, launched with its
 * own `args` less --single-process). Nothing is downloaded.
 */
export async function launchChromium(): Promise<Browser> {
  if (existsSync(DEBIAN_CHROMIUM)) return chromium.launch({ executablePath: DEBIAN_CHROMIUM, headless: true, args: QUIET });
  const { default: packaged } = await import('@sparticuz/chromium');
  // Its args are for AWS Lambda; --single-process ends the browser with its last context, and the
  // tests open one context per test.
  const args = packaged.args.filter((a) => a !== '--single-process');
  return chromium.launch({ executablePath: await packaged.executablePath(), headless: true, args: [...args, ...QUIET] });
}
