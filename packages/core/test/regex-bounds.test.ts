import fc from 'fast-check';
import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { aClusterProfile } from '@mco/core/testing';
import {
  compileRe2,
  MAX_REGEX_LENGTH,
  MAX_REGEX_PROGRAM_SIZE,
  type ClusterProfile,
  type PlacementSpec,
  type PlacementStatus,
} from '@mco/core';
import { clearRe2Caches, estimateProgramSize, matchWith } from '../src/selection/regex.js';
import { condition, listed, randomName, run } from './helpers.js';

const fleet: ClusterProfile[] = [aClusterProfile('prod/us-east1'), aClusterProfile('prod/eu-west4')];
const regexRule = (regex: string): PlacementSpec => ({
  clusterSelectorRules: [{ type: 'cluster-name-regex', arguments: { regex } }],
});
const status: PlacementStatus = { clusters: [listed('prod/eu-west4', 'ACTIVE', 0)] };

// `x{a}y{b}` compiles to a + b + 2 instructions (re2js's prologue and match).
const atProgramLimit = `x{1000}y{${MAX_REGEX_PROGRAM_SIZE - 1002}}`;
const overProgramLimit = `x{1000}y{${MAX_REGEX_PROGRAM_SIZE - 1001}}`;

describe('cluster-name-regex cost bounds', () => {
  it.each<[string, string, number]>([
    ['a pattern of exactly 1024 characters', 'a'.repeat(MAX_REGEX_LENGTH), MAX_REGEX_LENGTH + 2],
    ['a program of exactly 2,000 instructions', atProgramLimit, MAX_REGEX_PROGRAM_SIZE],
    ['a repeat count of 1000 (Go RE2 limit)', 'a{1000}', 1002],
    ['nested repeats whose product is 900', '(a{30}){30}', 962],
    // Without counted repetition a pattern compiles to at most about 1.5 instructions per character.
    ['1024 characters of empty capture groups', '()'.repeat(512), 1538],
    ['1024 characters of optional characters', 'a?'.repeat(512), 1026],
    ['five nested repeats of 2', '(?:(?:(?:(?:a{2}){2}){2}){2}){2}', 34],
    ['a thousand of an alternation of characters', '(?:a|b|[0-9]|\\pL){1000}', 1002],
    ['a DNS-label pattern', '^(prod|stage)-(us|eu)-[a-z0-9-]{1,63}/cluster-\\d+$', 161],
  ])('accepts %s', (_name, pattern, programSize) => {
    expect(pattern.length).toBeLessThanOrEqual(MAX_REGEX_LENGTH);
    const compiled = compileRe2(pattern);
    expect(compiled).toMatchObject({ ok: true, value: { source: pattern, programSize } });
  });

  it.each<[string, string, RegExp]>([
    [
      'a pattern of 1025 characters',
      'a'.repeat(MAX_REGEX_LENGTH + 1),
      /^pattern is 1025 characters long; the limit is 1024$/,
    ],
    [
      'a program of 2,001 instructions',
      overProgramLimit,
      /^pattern compiles to 2,001 instructions; the limit is 2,000 \(counted repetition/,
    ],
    ['a repeat count of 1001', 'a{1001}', /invalid repeat count: `\{1001\}`/],
    ['nested repeats whose product is 1200', '(a{40}){30}', /invalid repeat count/],
    [
      'a huge program, refused from the estimate before compiling',
      '\\pL{0,1000}'.repeat(90),
      /^pattern compiles to about 180,003 instructions; the limit is 2,000/,
    ],
    [
      'a program between the limit and the estimate slack, refused after compiling',
      '(?i)\\pL{0,1000}\\pL{0,500}',
      /^pattern compiles to 3,002 instructions; the limit is 2,000/,
    ],
  ])('refuses %s', (_name, pattern, message) => {
    const compiled = compileRe2(pattern);
    expect(compiled.ok).toBe(false);
    if (!compiled.ok) expect(compiled.error).toMatch(message);
  });

  it('makes the placement invalid naming the field, and leaves the workload where it is', () => {
    const d = run({ spec: regexRule(overProgramLimit), status, profiles: fleet, now: 100 });
    expect(d.status.clusters).toEqual(status.clusters);
    expect(d.transitions).toEqual([]);
    expect(condition(d, 'Valid')).toMatchObject({
      status: 'False',
      reason: 'InvalidRegex',
      message:
        'spec.clusterSelectorRules[0].arguments.regex: pattern compiles to 2,001 instructions; the limit is 2,000 ' +
        '(counted repetition such as {n,m} repeats what it applies to n to m times)',
    });
  });

  it.each([
    'us-east',
    '',
    '\\Q.*\\E{3}',
    '[[:alpha:]]{3,}',
    '(?i:ab)+|x*?y+?',
    '[^\\]a]{5}(?P<n>b)',
    '\\p{Greek}{2}\\x{41}{10}',
    '(?:(?:a{0,9}){0,9}){0,9}',
    '\\b\\w{1,200}\\b',
    // A repeat of a repeat with the same operator and greediness compiles once (the estimate was 53 for 22).
    '(?:(?:a+?)+?){10}',
    '(?:(?:(?:a+)+)+)*',
    atProgramLimit,
  ])('estimates /%s/ at or above its compiled size, and within 2× of it', (pattern) => {
    const compiled = compileRe2(pattern);
    if (!compiled.ok) throw new Error(compiled.error);
    const real = compiled.value.programSize;
    expect(estimateProgramSize(pattern)).toBeGreaterThanOrEqual(real);
    expect(estimateProgramSize(pattern)).toBeLessThanOrEqual(2 * real + 3);
  });
});

describe('the program-size estimate (the check before compiling)', () => {
  const atom = fc.constantFrom('a', '[a-z]', '\\d', '.', '\\pL', '(?i:x)', 'a|b', '\\b', '\\Qa.b\\E', '[[:alpha:]]');
  const quantifier = fc.constantFrom('', '*', '+?', '?', '{2}', '{3,}', '{0,5}', '{2,7}', '{10}', '{1,30}');
  const { pattern } = fc.letrec<{ pattern: string; piece: string }>((tie) => ({
    pattern: fc.array(tie('piece'), { minLength: 1, maxLength: 3 }).map((pieces) => pieces.join('')),
    piece: fc
      .tuple(
        fc.oneof(
          { depthSize: 'small', withCrossShrink: true },
          atom,
          tie('pattern').map((p) => `(?:${p})`),
          tie('pattern').map((p) => `(${p})`),
        ),
        quantifier,
      )
      .map(([a, q]) => a + q),
  }));

  it('never refuses a pattern that compiles within the limit: the estimate stays within 2× of the compiled size', () => {
    fc.assert(
      fc.property(pattern, (p) => {
        let real: number;
        try {
          real = RE2JS.compile(p).programSize();
        } catch {
          return; // invalid (e.g. nested repeats over 1000): re2js reports it
        }
        expect(estimateProgramSize(p)).toBeLessThanOrEqual(2 * real + 3);
      }),
      { numRuns: 300 },
    );
  });
});

describe('the per-(pattern, key) match cache', () => {
  const patterns = [
    'c0[0-5]',
    '^fleet/',
    '(?i)C0\\d',
    '[0-9][a-z0-9-]{8}9',
    '^(prod|stage)/[a-z]+-\\d$',
    '(?:a|b)*c',
    '\\bx\\b',
    '^$',
  ];
  const key = fc.stringMatching(/^[a-z0-9-]{0,8}\/[a-z0-9.-]{0,12}$/);

  it('answers exactly as matching without the cache, in any order, across cache clears', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            { weight: 20, arbitrary: fc.tuple(fc.constantFrom(...patterns), key).map(([p, k]) => ({ p, k })) },
            { weight: 1, arbitrary: fc.constant('clear' as const) },
          ),
          { maxLength: 60 },
        ),
        (steps) => {
          for (const step of steps) {
            if (step === 'clear') {
              clearRe2Caches();
              continue;
            }
            const compiled = compileRe2(step.p);
            if (!compiled.ok) throw new Error(compiled.error);
            const expected = RE2JS.compile(step.p).test(step.k);
            expect(compiled.value.testUncached(step.k)).toBe(expected);
            // Twice: the first call fills the cache, the second reads it.
            expect(compiled.value.test(step.k)).toBe(expected);
            expect(compiled.value.test(step.k)).toBe(expected);
          }
        },
      ),
    );
  });
});

describe("the engine choice (re2js's lazy DFA, or its NFA once the DFA thrashes)", () => {
  const names = Array.from({ length: 200 }, (_, i) => `${randomName(20, i * 7 + 1)}/${randomName(43, i * 13 + 5)}`);
  const compile = (pattern: string) => {
    clearRe2Caches();
    const compiled = compileRe2(pattern);
    if (!compiled.ok) throw new Error(compiled.error);
    return compiled.value;
  };

  it.each(['[0-9][a-z0-9-]{20}9', '[0-9][a-z0-9-]{40}9'])(
    'moves /%s/, whose DFA builds a state every few characters, to the NFA with the same answers',
    (pattern) => {
      const re = compile(pattern);
      expect(re.engine).toBe('dfa');
      const answers = names.map((n) => re.testUncached(n));
      expect(re.engine).toBe('nfa');
      expect(answers).toEqual(names.map((n) => matchWith('dfa', pattern, n)));
      expect(answers.filter(Boolean).length).toBeGreaterThan(0);
    },
  );

  it.each([
    '^(us|eu)-(east|west)[0-9]+/gpu-.*$',
    `(${Array.from({ length: 40 }, (_, i) => randomName(18, i * 31 + 3)).join('|')})`,
    '(?i)[a-z]+-[0-9]{3}',
    'c0[0-5]',
  ])('keeps /%s/, whose DFA settles, on the DFA', (pattern) => {
    const re = compile(pattern);
    for (const n of names) re.testUncached(n);
    expect(re.engine).toBe('dfa');
  });

  const atom = fc.constantFrom('a', '[a-c]', '\\d', '.', '-', '(?i:b)', 'a|b', '\\b', '^', '$', '[^a]');
  const quantifier = fc.constantFrom('', '*', '+?', '?', '{2}', '{1,}', '{0,3}');
  const pattern = fc
    .array(
      fc.tuple(
        fc.oneof(
          atom,
          atom.map((a) => `(${a})`),
        ),
        quantifier,
      ),
      { minLength: 1, maxLength: 6 },
    )
    .map((pieces) => pieces.map(([a, q]) => a + q).join(''));
  const input = fc.stringMatching(/^[abc0-9/-]{0,16}$/);

  it('the NFA answers exactly as the DFA on random patterns and names', () => {
    fc.assert(
      fc.property(pattern, input, (p, k) => {
        expect(matchWith('nfa', p, k)).toBe(matchWith('dfa', p, k));
      }),
      { numRuns: 2_000 },
    );
  });
});
