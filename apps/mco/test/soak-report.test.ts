// The soak's reports (docs/reliability.md), fed a recorded history: the text
// report's figures (faults by kind, convergence p50/p99/max, (b)'s exempted
// share and whether the run counts, violations with the events around them,
// RSS per process) and the HTML page's timeline, markers and RSS series,
// escaped and self-contained.
import { describe, expect, it } from 'vitest';
import type { Convergence } from '../soak/history.js';
import { htmlReport } from '../soak/report-html.js';
import { faultsByKind, textReport, type Verdict } from '../soak/report.js';
import { HOSTILE_OBJECT, HOSTILE_PROCESS, recordedRun } from './soak-fixture.js';

/** The recorded run's verdict with the convergence times given (ms), per fault kind. */
function withConvergences(times: Record<string, readonly (number | undefined)[]>): Verdict {
  const { verdict } = recordedRun();
  let id = 100;
  const convergences: Convergence[] = Object.entries(times).flatMap(([kind, list]) =>
    list.map((ms) => ({ id: id++, kind, target: '', end: 0, ...(ms === undefined ? {} : { ms }) }) as Convergence),
  );
  return { ...verdict, convergences };
}

describe('the text report', () => {
  it('counts the faults by kind, errors included', () => {
    const text = textReport(recordedRun());
    expect(text).toContain('FAULTS: 3 injected');
    expect(text).toMatch(/\n {2}member-down +2 +0 /);
    expect(text).toMatch(/\n {2}controller-kill +1 +1 /);
    expect(text).toContain('\n  fault 3 controller-kill controller-0: controller-0 did not start\n');
    expect(text).toMatch(/\n {2}etcd-restart +0 +0 +- /);
  });

  it('computes convergence p50, p99 and max per fault kind (nearest rank), and counts those that never converged', () => {
    // 1 to 100 s in a shuffled order: p50 50 s, p99 99 s, max 100 s.
    const hundred = Array.from({ length: 100 }, (_, i) => ((i * 37) % 100) + 1).map((s) => s * 1000);
    const verdict = withConvergences({ 'controller-kill': hundred, 'member-down': [7_000, 5_000, undefined] });
    const byKind = new Map(faultsByKind(recordedRun().history, verdict).map((k) => [k.kind, k]));
    expect(byKind.get('controller-kill')).toMatchObject({
      converged: { p50: 50_000, p99: 99_000, max: 100_000 },
      notConverged: 0,
    });
    expect(byKind.get('member-down')).toMatchObject({
      converged: { p50: 5_000, p99: 7_000, max: 7_000 },
      notConverged: 1,
    });
    expect(byKind.get('etcd-restart')?.converged).toBeUndefined();
    const text = textReport(recordedRun(100_000, verdict));
    expect(text).toMatch(/\n {2}controller-kill +1 +1 +50\.0 s \/ 99\.0 s \/ 100\.0 s +0\n/);
    expect(text).toMatch(/\n {2}member-down +2 +0 +5\.0 s \/ 7\.0 s \/ 7\.0 s +1\n/);
  });

  it("states (b)'s exempted share, and that the run does not count above 25%", () => {
    // 30 s below the minimum over a 100 s run of one placement: 30%; over 200 s: 15%.
    const short = textReport(recordedRun(100_000));
    expect(short).toContain(
      'invariant (b): 30.0% of placement-time exempted by the bounds after faults: more than 25.0%',
    );
    expect(short).toContain('THIS RUN DOES NOT COUNT');
    const long = textReport(recordedRun(200_000));
    expect(long).toContain(
      'invariant (b): 15.0% of placement-time exempted by the bounds after faults (at most 25.0% for the run to count)',
    );
    expect(long).not.toContain('DOES NOT COUNT');
  });

  it('lists each violation with the events around it', () => {
    const text = textReport(recordedRun());
    expect(text).toContain('VIOLATIONS: 1');
    const at = text.indexOf(
      `  (a) at 70.0 s: Deployment ${HOSTILE_OBJECT} of p1 on east deleted while the placement lists east`,
    );
    expect(at).toBeGreaterThan(0);
    // The events within a minute of it, in time order, the deletion itself included.
    expect(
      text
        .slice(at)
        .split('\n')
        .slice(1, 11)
        .map((line) => line.trimStart()),
    ).toEqual([
      '10.0 s  fault 1 start member-down east',
      '12.0 s  status p1: east UNHEALTHY (ControlPlaneUnhealthy), west ACTIVE',
      '20.0 s  fault 2 start member-down west',
      '40.0 s  fault 1 end member-down east',
      '42.0 s  status p1: east ACTIVE, west ACTIVE',
      '50.0 s  fault 2 end member-down west',
      '60.0 s  fault 3 start controller-kill controller-0',
      '65.0 s  fault 3 end controller-kill controller-0: controller-0 did not start',
      `70.0 s  east: Deployment ${HOSTILE_OBJECT} deleted`,
      '',
    ]);
  });

  it('gives RSS per process: first, last, max and growth over the window of the incarnation alive through it', () => {
    const text = textReport(recordedRun());
    expect(text).toMatch(/\n {2}controller-0 +80000 +60000 +80000 {2}n\/a \(restarted in the window\)\n/);
    // The window is the second half of this 100 s run: 105 000 kB at 50 s, 110 000 kB at 100 s.
    expect(text).toMatch(/\n {2}mco-flux +100000 +110000 +110000 {2}4\.8%\n/);
    expect(text).toContain(`  ${HOSTILE_PROCESS} `);
  });
});

describe('the HTML report', () => {
  const html = htmlReport(recordedRun());
  // The lane chart's x: 150 px on the left, 16 on the right of 960, over the 100 s run.
  const x = (s: number) => (Math.round((150 + (794 * s) / 100) * 10) / 10).toString();

  it('draws one lane per fault kind with a bar from each start to end, darker where two overlap', () => {
    expect(html).toContain('data-chart="faults"');
    for (const kind of ['member-down', 'controller-kill', 'etcd-restart', 'placement-invalid']) {
      expect(html).toContain(`text-anchor="end">${kind}</text>`);
    }
    const bars = [
      ...html.matchAll(/<rect class="state" data-state="([^"]+)" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"/g),
    ].map((m) => [m[1], m[2], m[3]]);
    expect(bars).toEqual(
      expect.arrayContaining([
        ['fault', x(10), (Number(x(20)) - Number(x(10))).toFixed(1)],
        ['two or more at once', x(20), (Number(x(40)) - Number(x(20))).toFixed(1)],
        ['fault', x(40), (Number(x(50)) - Number(x(40))).toFixed(1)],
        ['fault', x(60), (Number(x(65)) - Number(x(60))).toFixed(1)],
      ]),
    );
    expect(bars).toHaveLength(4);
  });

  it('marks each violation with its message on the timeline and lists it with the events around it', () => {
    const escapedObject = '&lt;img src=x onerror=alert(1)&gt;';
    const message = `(a) 70.0 s Deployment ${escapedObject} of p1 on east deleted while the placement lists east`;
    const timeline = html.slice(
      html.indexOf('data-chart="faults"'),
      html.indexOf('</svg>', html.indexOf('data-chart="faults"')),
    );
    expect(timeline).toContain(`<g class="marker"><title>${message}</title><line x1="${x(70)}"`);
    expect(html).toContain(`<li class="violation"><b>(a)</b> at 70.0 s: Deployment ${escapedObject} of p1`);
    expect(html).toContain('fault 3 end controller-kill controller-0: controller-0 did not start');
    expect(html).toContain('<td>controller-0 did not start</td>');
  });

  it('draws the ACTIVE clusters of each placement over time', () => {
    expect(html).toContain('data-chart="active"');
    expect(html).toMatch(/<path class="series" data-series="p1" d="M[^"]+"/);
  });

  it('draws RSS over time for every process, with its restarts marked', () => {
    const rss = html.slice(html.indexOf('data-chart="rss"'));
    for (const name of ['controller-0', 'mco-flux', '&lt;script&gt;alert(1)&lt;/script&gt;']) {
      expect(rss).toMatch(
        new RegExp(`<path class="series" data-series="${name.replace(/[()]/g, '\\$&')}" d="M[^"]+(L[^"]+){10}"`),
      );
    }
    expect(rss).toContain('<title>60.0 s controller-0 restarted (pid 100 → 200)</title>');
  });

  it('escapes every name and message, and loads nothing from anywhere', () => {
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    // The only URL is the SVG namespace, which nothing fetches.
    const urls = [...html.matchAll(/[a-z]+:\/\/[^"'\s<>)]*/gi)].map((m) => m[0]);
    expect(new Set(urls)).toEqual(new Set(['http://www.w3.org/2000/svg']));
    // No tag with an attribute that loads anything (escaped text such as `src=x` in a message is only text).
    expect(html).not.toMatch(/<[a-z][^>]*\s(src|href|srcset|data)\s*=|url\(|@import|<link|<iframe|<object|<embed/i);
  });
});
