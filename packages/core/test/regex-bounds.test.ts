import fc from 'fast-check';
import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { aClusterProfile } from '@mco/core/testing';
import {
  compileRe2,
  MAX_REGEX_LENGTH,
  MAX_REGEX_POSITIONS,
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

// `x{a}y{b}` compiles to a + b + 2 instructions (re2js's prologue and match); `(){n}` to 3n + 2, without a position.
const atProgramLimit = `(){${(MAX_REGEX_PROGRAM_SIZE - 2) / 3}}`;
const overProgramLimit = `x{1000}y{${MAX_REGEX_PROGRAM_SIZE - 1001}}`;
const positionsMessage = (n: number) =>
  `pattern has ${n} character positions; the limit is ${MAX_REGEX_POSITIONS} (each literal character, class or . ` +
  'counts once per copy a repetition makes: [a-z0-9-]{1,63} is 63, [a-z0-9-]+ is 1; to select clusters by name, ' +
  'list them with a cluster-list rule)';

describe('cluster-name-regex cost bounds', () => {
  it.each<[string, string, number, number]>([
    ['1024 characters of empty capture groups', '()'.repeat(512), 1538, 0],
    ['a program of exactly 2,000 instructions', atProgramLimit, MAX_REGEX_PROGRAM_SIZE, 0],
    ['a repeat count of 1000 (Go RE2 limit) of an empty-width assertion', '(?:\\b){1000}', 1002, 0],
    ['exactly 64 positions', 'a{64}', 66, MAX_REGEX_POSITIONS],
    ['a label of 1 to 64 characters', '[a-z0-9-]{1,64}', 129, MAX_REGEX_POSITIONS],
    ['five nested repeats of 2', '(?:(?:(?:(?:a{2}){2}){2}){2}){2}', 34, 32],
    ['a prefixed name pattern', '^(prod|stage)-(us|eu)-[a-z0-9-]+/cluster-\\d+$', 38, 26],
  ])('accepts %s', (_name, pattern, programSize, positions) => {
    expect(pattern.length).toBeLessThanOrEqual(MAX_REGEX_LENGTH);
    const compiled = compileRe2(pattern);
    expect(compiled).toMatchObject({ ok: true, value: { source: pattern, programSize, positions } });
  });

  it.each<[string, string, RegExp | string]>([
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
    ['65 positions', 'a{65}', positionsMessage(65)],
    ['1024 characters of optional characters', 'a?'.repeat(512), /^pattern has 512 character positions/],
    [
      'a DNS-label pattern with counted repetition',
      '^(prod|stage)-(us|eu)-[a-z0-9-]{1,63}/cluster-\\d+$',
      /^pattern has 88 character positions/,
    ],
    // Issue 28: each took seconds over 1,000 names of 317 characters before the limit.
    ['a thousand of a class of every character', '[\\pL\\pN\\pP\\pS]{1000}', /^pattern has 1000 character positions/],
    ['999 of an alternation of every character', '(?:\\PL|\\pL){999}', /^pattern has 999 character positions/],
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
    `x{1000}y{${MAX_REGEX_PROGRAM_SIZE - 1002}}`,
    // A repeat of a repeat with the same operator and greediness compiles once (the estimate was 53 for 22).
    '(?:(?:a+?)+?){10}',
    '(?:(?:(?:a+)+)+)*',
  ])('estimates /%s/ at or above its compiled size, and within 2× of it', (pattern) => {
    const real = RE2JS.compile(pattern).programSize();
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

describe('the bit-parallel matcher (BitMatcher) answers exactly as re2js', () => {
  const atom = fc.constantFrom(
    'a',
    '[a-c]',
    '\\d',
    '.',
    '-',
    '(?i:b)',
    'a|b',
    '\\b',
    '\\B',
    '^',
    '$',
    '[^a]',
    '(?m:^)',
    '(?m:$)',
    '\\A',
    '\\z',
    '(?s:.)',
    '\\pL',
    'é',
  );
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
  const input = fc.stringMatching(/^[abcB0-9/_\n é-]{0,16}$/);

  it('on random patterns and inputs (newlines, word boundaries, non-ASCII and case folding included)', () => {
    fc.assert(
      fc.property(pattern, input, (p, k) => {
        expect(matchWith('bits', p, k)).toBe(matchWith('re2js', p, k));
      }),
      { numRuns: 3_000 },
    );
  });

  const names = Array.from({ length: 100 }, (_, i) => `${randomName(63, i * 7 + 1)}/${randomName(253, i * 13 + 5)}`);
  it.each([
    '[0-9][a-z0-9-]{20}9',
    '[0-9][a-z0-9-]{60}9',
    '(?:.{0,30}-){0,2}q',
    '[\\pL\\pN\\pP\\pS]{62}[^\\pL\\pN\\pP\\pS]',
    '\\b[a-z]{3}\\b',
    '^[a-z0-9-]+/[a-z0-9-]*[0-9]$',
    'c0[0-5]',
  ])('on /%s/ over 100 names of the longest legal length (317 characters)', (p) => {
    const answers = names.map((n) => matchWith('bits', p, n));
    expect(answers).toEqual(names.map((n) => matchWith('re2js', p, n)));
  });
});
