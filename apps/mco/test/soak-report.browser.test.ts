/// <reference lib="dom" />
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { htmlReport } from '../soak/report-html.js';
import { HOSTILE_PROCESS, recordedRun } from './soak-fixture.js';

// The soak's HTML report in real headless Chromium (Debian's package), from a
// recorded history. Under CI it must run; elsewhere it is skipped when
// Chromium is not installed.
const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
const inCi = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';
if (!available && !inCi) console.warn(`skipping the soak report rendering test: ${CHROMIUM} is absent`);

describe.skipIf(!available && !inCi)("the soak's HTML report in headless Chromium", () => {
  let browser: Browser;
  let page: Page;
  const dir = mkdtempSync(join(tmpdir(), 'mco-soak-report-'));
  const problems: string[] = [];
  const requests: string[] = [];

  beforeAll(async () => {
    if (!available) throw new Error(`${CHROMIUM} is absent: CI must apt-get install -y chromium`);
    const file = join(dir, 'soak-42.html');
    writeFileSync(file, htmlReport(recordedRun()));
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    const url = pathToFileURL(file).href;
    await page.route('**/*', (route) => {
      if (route.request().url() === url) return route.continue();
      requests.push(route.request().url());
      return route.abort();
    });
    await page.goto(url, { waitUntil: 'load' });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('loads without console errors, without fetching anything, and runs no script', async () => {
    expect({ problems, requests }).toEqual({ problems: [], requests: [] });
    expect(await page.$$eval('script', (s) => s.length)).toBe(0);
  });

  it('renders the timeline, ACTIVE and RSS charts with their bars, markers and lines', async () => {
    const charts = await page.$$eval('svg.chart', (svgs) =>
      svgs.map((svg) => {
        const box = svg.getBoundingClientRect();
        const drawn = (selector: string) =>
          Array.from(svg.querySelectorAll<SVGGraphicsElement>(selector)).filter((e) => {
            const b = e.getBBox();
            return b.width > 0 || b.height > 0;
          }).length;
        return {
          id: svg.dataset.chart,
          visible: box.width > 600 && box.height > 150,
          bars: drawn('rect.state'),
          markers: drawn('g.marker line'),
          lines: Array.from(svg.querySelectorAll('path.series')).map((p) => p.getAttribute('data-series')),
        };
      }),
    );
    expect(charts).toEqual([
      { id: 'faults', visible: true, bars: 4, markers: 1, lines: [] },
      { id: 'active', visible: true, bars: 0, markers: 1, lines: ['p1'] },
      { id: 'rss', visible: true, bars: 0, markers: 1, lines: ['controller-0', 'mco-flux', HOSTILE_PROCESS] },
    ]);
  });

  it('shows a hostile process name as text', async () => {
    const legend = await page.$$eval('svg[data-chart="rss"] text.legend', (texts) => texts.map((t) => t.textContent));
    expect(legend).toContain(HOSTILE_PROCESS);
  });
});
