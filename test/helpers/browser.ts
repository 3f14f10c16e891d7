import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/**
 * Debian's Chromium (`apt-get install chromium`; .ci/run installs it), driven by playwright-core — which
 * downloads no browser of its own. `CTL_CHROMIUM` names another build.
 */
export function chromiumPath(): string {
  const candidates = [process.env.CTL_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
    (p): p is string => !!p,
  );
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`no Chromium found (${candidates.join(', ')}); apt-get install chromium`);
  return found;
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    // As root (CI) Chromium refuses its sandbox; the pages are our own.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

/** A page that records console errors, failed requests and requests that leave the machine. */
export interface WatchedPage {
  page: Page;
  context: BrowserContext;
  consoleErrors: string[];
  offMachine: string[];
}

export async function watchedPage(browser: Browser, viewport = { width: 1280, height: 800 }): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const consoleErrors: string[] = [];
  const offMachine: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.on('pageerror', (err) => consoleErrors.push(err.message));
  page.on('request', (r) => {
    const url = new URL(r.url());
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) && url.protocol !== 'data:')
      offMachine.push(r.url());
  });
  return { page, context, consoleErrors, offMachine };
}

/**
 * A page at `url` allowed to notify, whose notifications are recorded (`RECORD_NOTIFICATIONS`) and whose
 * uncaught errors are collected.
 */
export async function notifyingPage(
  browser: Browser,
  url: string,
): Promise<{ page: Page; context: BrowserContext; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, permissions: ['notifications'] });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  try {
    await page.addInitScript(RECORD_NOTIFICATIONS);
    await page.goto(url);
  } catch (err) {
    await context.close();
    throw err;
  }
  return { page, context, errors };
}

const require = createRequire(import.meta.url);

/** axe-core's source, evaluated in the page (DevTools evaluation is not subject to the page's CSP). */
export function axeSource(): string {
  return readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** axe-core's serious and critical violations on the page as it is now. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource());
  const result = await page.evaluate<{ violations: AxeViolation[] }>(
    "axe.run(document, { resultTypes: ['violations'] })",
  );
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

// Records every Notification the page constructs, and plays a browser that has not been asked yet: the
// permission reads "default" until the page asks (the context grants it, so the real answer is "granted").
export const RECORD_NOTIFICATIONS = `(() => {
  const Real = window.Notification;
  window.__notices = [];
  window.__asked = 0;
  const asked = () => sessionStorage.getItem('asked') === '1';
  class Recorded extends Real {
    constructor(title, options) {
      super(title, options);
      window.__notices.push({ title, body: options && options.body });
    }
    static get permission() { return asked() ? Real.permission : 'default'; }
    static requestPermission() {
      sessionStorage.setItem('asked', '1');
      window.__asked++;
      return Real.requestPermission();
    }
  }
  window.Notification = Recorded;
})()`;
