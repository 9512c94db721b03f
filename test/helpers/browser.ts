import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Debian's Chromium in a fresh profile directory, closed and removed when the test ends. Launch it
 * before starting the servers it visits: `t.after` hooks run in the order they were added, and a
 * server closing while the browser still holds a connection open waits for it.
 */
export async function launchBrowser(
  t: TestContext,
  options: { viewport?: { width: number; height: number }; javaScriptEnabled?: boolean } = {},
): Promise<BrowserContext> {
  const profile = mkdtempSync(path.join(tmpdir(), 'svc-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: options.viewport ?? { width: 1280, height: 900 },
    javaScriptEnabled: options.javaScriptEnabled ?? true,
  });
  t.after(async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  });
  return context;
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * Runs axe-core on the page (evaluated through the DevTools protocol, which the page's CSP does
 * not govern) and fails on any serious or critical violation of WCAG 2.x A/AA rules.
 */
export async function assertAccessible(page: Page): Promise<void> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: axe and document are globals of the page
    const page = globalThis as any;
    const result = await page.axe.run(page.document, {
      runOnly: {
        type: 'tag',
        values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'],
      },
    });
    return (
      result.violations as { id: string; impact: string; help: string; nodes: { target: string[] }[] }[]
    )
      .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      .map(
        (violation) =>
          `${violation.id} (${violation.impact}): ${violation.help} at ${violation.nodes.map((n) => n.target.join(' ')).join(', ')}`,
      );
  });
  assert.deepEqual(violations, [], `accessibility violations on ${page.url()}`);
}

/** Collects what the browser reports as errors (a CSP violation, a failed script) on the page. */
export function collectConsoleErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(error.message));
  return errors;
}

/** Whether the page is wider than its window, so a phone would scroll it sideways. */
export function scrollsSideways(page: Page): Promise<boolean> {
  // An expression evaluated in the page, where `document` and `window` exist (the tests have no DOM types).
  return page.evaluate('document.documentElement.scrollWidth > window.innerWidth') as Promise<boolean>;
}
