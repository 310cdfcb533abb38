/// <reference lib="dom" />
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GPU_STOCKOUT_SCENARIO, parseScenarioText, renderReport, simulate } from '../src/index.js';

// Renders the HTML report in real headless Chromium (Debian's package).
// Under CI it must run; elsewhere it is skipped when Chromium is not installed.
const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
const inCi = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';
if (!available && !inCi) {
  console.warn(`skipping the report rendering tests: ${CHROMIUM} is absent (apt-get install -y chromium)`);
}

const REPORTS = new URL('../reports/', import.meta.url);

describe.skipIf(!available && !inCi)('the HTML report in headless Chromium', () => {
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  const requests: string[] = [];

  beforeAll(async () => {
    if (!available) throw new Error(`${CHROMIUM} is absent: CI must apt-get install -y chromium`);
    const parsed = parseScenarioText(GPU_STOCKOUT_SCENARIO);
    if (!parsed.ok) throw new Error('the embedded scenario is invalid');
    mkdirSync(REPORTS, { recursive: true });
    const file = new URL('gpu-stockout-report.html', REPORTS);
    writeFileSync(file, renderReport(simulate(parsed.value)));

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    const url = pathToFileURL(file.pathname).href;
    await page.route('**/*', (route) => {
      if (route.request().url() === url) return route.continue();
      requests.push(route.request().url());
      return route.abort();
    });
    await page.goto(url, { waitUntil: 'load' });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('loads without console errors and without fetching anything', () => {
    expect({ problems, requests }).toEqual({ problems: [], requests: [] });
  });

  it('draws every chart with a visible size, its series and its lanes', async () => {
    // The baselines' charts sit in closed <details>: open them so they are laid out.
    await page.evaluate(() => document.querySelectorAll('details').forEach((d) => (d.open = true)));
    const charts = await page.$$eval('svg.chart', (svgs) =>
      svgs.map((svg) => {
        const box = svg.getBoundingClientRect();
        const paths = Array.from(svg.querySelectorAll<SVGPathElement>('path.series'));
        return {
          id: svg.dataset.chart,
          visible: box.width > 300 && box.height > 100,
          series: paths.length,
          drawn: paths.every((p) => p.getTotalLength() > 0 && p.getBBox().width > 0),
          stateRects: svg.querySelectorAll('rect.state').length > 0,
        };
      }),
    );
    const policies = ['mco', 'mco-as-documented', 'always-on'];
    expect(charts).toEqual([
      { id: 'demand', visible: true, series: 4, drawn: true, stateRects: false },
      ...policies.flatMap((p) => [
        { id: `states-${p}`, visible: true, series: 0, drawn: true, stateRects: true },
        { id: `replicas-${p}`, visible: true, series: 5, drawn: true, stateRects: false },
        { id: `pending-${p}`, visible: true, series: 4, drawn: true, stateRects: false },
      ]),
    ]);
  });

  it('colours the lanes by state: us-east4 is ACTIVE, SCALING_IN, then removed by delivery, under mco', async () => {
    const states = await page.$$eval('svg[data-chart="states-mco"] rect.state', (rects) =>
      rects.map((r) => `${r.querySelector('title')?.textContent?.split(':')[0]} ${r.getAttribute('data-state')}`),
    );
    expect(states).toEqual([
      'fleet/us-central1 ACTIVE',
      'fleet/us-east4 ACTIVE',
      'fleet/us-east4 SCALING_IN',
      'fleet/us-east4 REMOVING',
    ]);
  });

  it('shows the comparison table with one column per policy', async () => {
    const header = await page.$$eval('table.summary thead th', (ths) => ths.map((th) => th.textContent));
    const rows = await page.$$eval('table.summary tbody tr', (trs) => trs.length);
    expect({ header, rows }).toEqual({
      header: ['', 'mco', 'MCO as documented', 'all eligible clusters always on'],
      rows: 12,
    });
  });

  it('takes a screenshot for a person to look at', async () => {
    const path = new URL('gpu-stockout-report.png', REPORTS).pathname;
    const png = await page.screenshot({ path, fullPage: true });
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.length).toBeGreaterThan(50_000);
  });
});
