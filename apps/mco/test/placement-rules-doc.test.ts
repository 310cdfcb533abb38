// docs/placement-rules.md stays true to the code: its generated blocks are
// rendered here from the engine (MCO_UPDATE_DOCS=1 rewrites them), and every
// transition id and every reason the engine writes must appear in it.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_BEHAVIOR, TRANSITION_IDS } from '@mco/core';
import { describe, expect, it } from 'vitest';
import { main } from '../src/main.js';

const REPO = new URL('../../../', import.meta.url).pathname;
const DOC = join(REPO, 'docs/placement-rules.md');
const CORE_SRC = join(REPO, 'packages/core/src');

/** Where each default of the engine is set in a placement. */
const FIELDS: Record<keyof typeof DEFAULT_BEHAVIOR, string> = {
  scaleOutStabilizationSeconds: 'scaleOut.stabilizationWindowSeconds',
  scaleInStabilizationSeconds: 'scaleIn.stabilizationWindowSeconds',
  scaleInCooldownSeconds: 'scaleIn.cooldownSeconds',
  drainStepIntervalSeconds: 'drain.stepIntervalSeconds',
  drainStepPercent: 'drain.stepPercent',
  evictionTimeoutSeconds: 'evictionTimeoutSeconds',
  unhealthyTimeoutSeconds: 'unhealthyTimeoutSeconds',
  signalStaleAfterSeconds: 'signalStaleAfterSeconds',
  profileLossGraceSeconds: 'spec.scaling.behavior.profileLossGraceSeconds',
  failBackEnabled: 'failBack.enabled',
  failBackStabilizationSeconds: 'failBack.stabilizationWindowSeconds',
  failBackMaxStabilizationSeconds: 'failBack.maxStabilizationWindowSeconds',
  failBackBackoffDecaySeconds: 'failBack.backoffDecaySeconds',
  failBackLingerSeconds: 'failBack.lingerSeconds',
  failBackPeakLookbackSeconds: 'failBack.peakLookbackSeconds',
};

function defaultsTable(): string {
  const rows = Object.entries(DEFAULT_BEHAVIOR).map(([key, value]) => {
    const field = FIELDS[key as keyof typeof DEFAULT_BEHAVIOR];
    const path = field.startsWith('spec.') ? field : `spec.scaling.autoscaleForCapacity.behavior.${field}`;
    return `| \`${path}\` | ${String(value)} |`;
  });
  return ['| field | default |', '|---|---|', ...rows].join('\n');
}

async function explainStockout(): Promise<string> {
  let out = '';
  const code = await main(['explain', '-f', join(REPO, 'examples/decide/stockout.yaml')], {
    stdout: (text) => void (out += text),
    stderr: (text) => void (out += text),
  });
  if (code !== 0) throw new Error(`mco explain exited ${code}: ${out}`);
  return ['```', out.trimEnd(), '```'].join('\n');
}

const BLOCK = /(<!-- BEGIN GENERATED: ([a-z-]+) -->\n\n)([\s\S]*?)(\n\n<!-- END GENERATED: \2 -->)/g;

async function rendered(doc: string): Promise<string> {
  const blocks: Record<string, string> = { defaults: defaultsTable(), 'explain-stockout': await explainStockout() };
  const names = [...doc.matchAll(BLOCK)].map((m) => m[2]!);
  expect(names.sort()).toEqual(Object.keys(blocks).sort());
  return doc.replace(
    BLOCK,
    (_all, begin: string, name: string, _old: string, end: string) => begin + blocks[name]! + end,
  );
}

/** Every string literal `'Xyz'` that a pattern captures in the engine's sources. */
function literals(pattern: RegExp): string[] {
  const files = readdirSync(CORE_SRC, { recursive: true, encoding: 'utf8' }).filter(
    (f) => f.endsWith('.ts') && !f.startsWith('testing'),
  );
  const found = files.flatMap((f) => [...readFileSync(join(CORE_SRC, f), 'utf8').matchAll(pattern)].map((m) => m[1]!));
  return [...new Set(found)].sort();
}

describe('docs/placement-rules.md', () => {
  const doc = readFileSync(DOC, 'utf8');

  it('has its generated blocks (defaults, the mco explain example) as the code renders them', async () => {
    const expected = await rendered(doc);
    if (process.env.MCO_UPDATE_DOCS === '1' && expected !== doc) writeFileSync(DOC, expected);
    else
      expect(doc, 'run MCO_UPDATE_DOCS=1 npx vitest run test/placement-rules-doc.test.ts in apps/mco').toBe(expected);
  });

  it('lists every transition id in the table of §3, in the engine’s order', () => {
    const section = doc.slice(doc.indexOf('## 3. '), doc.indexOf('## 4. '));
    const ids = [...section.matchAll(/^\| ([A-Z]\d) \|/gm)].map((m) => m[1]);
    expect(ids).toEqual([...TRANSITION_IDS]);
  });

  it('names every condition reason and every cluster reason the engine writes', () => {
    const reasons = [
      ...literals(/reason: '([A-Z][A-Za-z]+)'/g),
      // this.move(entry, <id>, <state>, '<Reason>', ...), and the reasons chosen into variables first
      ...literals(/this\.move\(\s*[^,]+,\s*[^,]+,\s*[^,]+,\s*'([A-Z][A-Za-z]+)'/g),
      ...literals(/\? '([A-Z][A-Za-z]+)'/g),
      ...literals(/return '([A-Z][A-Za-z]+Unhealthy)'/g),
    ];
    const missing = [...new Set(reasons)].filter((reason) => !doc.includes(`\`${reason}\``));
    expect(missing).toEqual([]);
  });
});
