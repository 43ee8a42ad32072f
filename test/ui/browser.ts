// Shared by the dashboard's browser tests: Debian's chromium through playwright-core (no downloaded browser), a page
// on a node's /ui with a token, page errors collected, and screenshots written where the test prints them.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { Defer } from '../support/in-process-node.ts';

export const SHOTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../test-output/ui');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function launch(defer: Defer): Promise<Browser> {
  await mkdir(SHOTS, { recursive: true });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  defer(() => browser.close());
  return browser;
}

export interface OpenPage {
  page: Page;
  errors: string[];
  /** Saves a screenshot under test-output/ui and answers its path. */
  shot(name: string): Promise<string>;
}

/** A page (1366x768 unless told) with errors collected; `open` goes to /ui with the token unless false. */
export async function openPage(browser: Browser, o: { http: string; token?: string; width?: number; height?: number; prefix: string; go?: boolean }): Promise<OpenPage> {
  const page = await browser.newPage({ viewport: { width: o.width ?? 1366, height: o.height ?? 768 } });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(String(err)));
  if (o.go !== false && o.token) await page.goto(`${o.http}/ui#token=${encodeURIComponent(o.token)}`);
  return {
    page,
    errors,
    async shot(name) {
      const file = path.join(SHOTS, `${o.prefix}-${name}.png`);
      await page.screenshot({ path: file });
      return file;
    },
  };
}

/** Waits until the page says live (every list loaded). */
export async function whenLive(page: Page): Promise<void> {
  await page.getByTestId('connection').filter({ hasText: /^live$/ }).waitFor({ timeout: 60_000 });
}
