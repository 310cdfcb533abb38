import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileRe2 } from '@mco/core';
import { matchWith } from '../src/selection/regex.js';
import { preparedTool } from '@mco/testkit';

interface Vector {
  readonly pattern: string;
  readonly input?: string;
  readonly match?: boolean;
  readonly error?: boolean;
  /** A known difference between re2js and Go, documented in docs/api.md. */
  readonly goDiffers?: string;
}
const vectorsPath = new URL('./re2/vectors.json', import.meta.url).pathname;
const vectors: Vector[] = JSON.parse(readFileSync(vectorsPath, 'utf8'));
const label = (v: Vector) =>
  v.error
    ? `/${v.pattern}/ is rejected`
    : `/${v.pattern}/ ${v.match ? 'matches' : 'does not match'} ${JSON.stringify(v.input)}`;

describe('cluster-name-regex uses Go RE2 semantics (re2js)', () => {
  it.each(vectors.map((v) => [label(v), v] as const))('%s', (_name, v) => {
    const compiled = compileRe2(v.pattern);
    if (v.error) {
      expect(compiled.ok).toBe(false);
      return;
    }
    expect(compiled.ok).toBe(true);
    if (compiled.ok) expect(compiled.value.test(v.input!)).toBe(v.match);
    // The engine mco matches with, and re2js's own, which the vectors were checked against.
    expect(matchWith('bits', v.pattern, v.input!)).toBe(v.match);
    expect(matchWith('re2js', v.pattern, v.input!)).toBe(v.match);
  });

  // tools/go-helpers/re2check, built before the tests by scripts/prepare-tools.mjs.
  const goHelpers = preparedTool('go-helpers');
  if (!goHelpers && process.env.CI !== 'true')
    console.warn('[re2] skipping the Go regexp cross-check: go-helpers not prepared (run npm test)');
  it.skipIf(!goHelpers && process.env.CI !== 'true')(
    "Go regexp agrees with every vector (tools/go-helpers' re2check)",
    () => {
      const out = execFileSync(join(goHelpers ?? '', 're2check'), {
        input: JSON.stringify(vectors.map((v) => ({ pattern: v.pattern, input: v.input ?? '' }))),
        encoding: 'utf8',
      });
      const results: { error: boolean; match: boolean }[] = JSON.parse(out);
      const disagreements = vectors.flatMap((v, i) => {
        const go = results[i]!;
        if (v.goDiffers) return [];
        const expected = v.error ? { error: true, match: false } : { error: false, match: v.match! };
        return go.error === expected.error && go.match === expected.match
          ? []
          : [`${label(v)}: Go says ${JSON.stringify(go)}`];
      });
      expect(disagreements).toEqual([]);
    },
  );
});
