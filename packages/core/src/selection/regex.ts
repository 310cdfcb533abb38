import { RE2JS } from 're2js';
import { MAX_REGEX_LENGTH, MAX_REGEX_POSITIONS, MAX_REGEX_PROGRAM_SIZE } from '../api/placement.js';
import { err, ok, type Result } from '../result.js';
import { BitMatcher, countPositions, type Re2Program } from './bit-nfa.js';

/** A compiled Go-RE2 pattern; `test` is unanchored like Go's `regexp.MatchString`. */
export interface Re2Pattern {
  readonly source: string;
  /** Instructions in the compiled program (at most `MAX_REGEX_PROGRAM_SIZE`). */
  readonly programSize: number;
  /** Character positions of the program (at most `MAX_REGEX_POSITIONS`): what a match costs. */
  readonly positions: number;
  /** Memoised per input (see the match cache below): same answer as `testUncached`. */
  test(input: string): boolean;
  /** Runs the match without the cache; for tests and benchmarks. */
  testUncached(input: string): boolean;
}

// Compiling is far costlier than matching, and a fleet re-evaluates the same
// few patterns constantly. The cache only memoises a pure function; a hit
// moves the pattern to the back, so eviction drops the least recently used.
// Each entry holds its matcher's tables (up to about 18 KB per empty-width
// context the names meet, a few at most), hence 256.
const CACHE_LIMIT = 256;
const cache = new Map<string, Result<Re2Pattern, string>>();

// Per-(pattern, key) match results: a fleet asks the same (pattern, cluster)
// question on every evaluation, and a match still costs a few microseconds
// on long names. All maps share one entry budget (about 10 MB); when it is
// spent, every map is emptied and filling starts again, so memory stays
// bounded whatever the number of placements and clusters.
const MATCH_CACHE_ENTRIES = 200_000;
let matchEntries = 0;
const liveMatchMaps = new Set<Map<string, boolean>>();

/**
 * Compiles `pattern` with Go's RE2 syntax and semantics (re2js's parser and
 * compiler), never with the JavaScript RegExp engine: no backreferences, no
 * lookaround. Matches run on `BitMatcher`, whose cost per character is
 * bounded by the program's positions. Refuses patterns over
 * `MAX_REGEX_LENGTH` characters, whose program would exceed
 * `MAX_REGEX_PROGRAM_SIZE` instructions, or that have more than
 * `MAX_REGEX_POSITIONS` character positions.
 */
export function compileRe2(pattern: string): Result<Re2Pattern, string> {
  const hit = cache.get(pattern);
  if (hit) {
    cache.delete(pattern);
    cache.set(pattern, hit);
    return hit;
  }
  const result = compileUncached(pattern);
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  cache.set(pattern, result);
  return result;
}

/** Forgets every compiled pattern and match result (benchmarks measure cold evaluations with it). */
export function clearRe2Caches(): void {
  cache.clear();
  for (const map of liveMatchMaps) map.clear();
  liveMatchMaps.clear();
  matchEntries = 0;
}

function compileUncached(pattern: string): Result<Re2Pattern, string> {
  if (pattern.length > MAX_REGEX_LENGTH) {
    return err(`pattern is ${pattern.length} characters long; the limit is ${MAX_REGEX_LENGTH}`);
  }
  // Compiling itself is what a huge repetition makes slow (`\pL{0,1000}` 90
  // times: 186,000 instructions, 1.5 s), so refuse from an estimate first.
  // The estimate may over-count, hence the slack; the compiled size below is
  // the authoritative check.
  const estimate = estimateProgramSize(pattern);
  if (estimate > 2 * MAX_REGEX_PROGRAM_SIZE) return err(tooLarge(`about ${estimate.toLocaleString('en')}`));
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern);
  } catch (error) {
    return err(error instanceof Error ? error.message : String(error));
  }
  const programSize = compiled.programSize();
  if (programSize > MAX_REGEX_PROGRAM_SIZE) return err(tooLarge(programSize.toLocaleString('en')));
  const program = re2Program(compiled);
  const positions = countPositions(program);
  if (positions > MAX_REGEX_POSITIONS) return err(tooManyPositions(positions));
  const matcher = new BitMatcher(program);
  const testUncached = (input: string) => matcher.test(input);
  const matches = new Map<string, boolean>();
  return ok({
    source: pattern,
    programSize,
    positions,
    testUncached,
    test(input: string): boolean {
      const known = matches.get(input);
      if (known !== undefined) return known;
      const result = testUncached(input);
      if (matchEntries >= MATCH_CACHE_ENTRIES) {
        for (const map of liveMatchMaps) map.clear();
        liveMatchMaps.clear();
        matchEntries = 0;
      }
      matches.set(input, result);
      liveMatchMaps.add(matches);
      matchEntries++;
      return result;
    },
  });
}

/** re2js's compiled program (internal to re2js; the test suite checks it is still there). */
function re2Program(compiled: RE2JS): Re2Program {
  const program = (compiled as unknown as { re2Input?: { prog?: Re2Program } }).re2Input?.prog;
  if (!program?.inst) throw new Error('re2js no longer exposes its compiled program (re2Input.prog)');
  return program;
}

/** Matches with re2js's own engine or with `BitMatcher`; for tests that compare the two. */
export function matchWith(engine: 're2js' | 'bits', pattern: string, input: string): boolean {
  const compiled = RE2JS.compile(pattern);
  return engine === 're2js' ? compiled.test(input) : new BitMatcher(re2Program(compiled)).test(input);
}

const tooManyPositions = (positions: number) =>
  `pattern has ${positions} character positions; the limit is ${MAX_REGEX_POSITIONS} ` +
  '(each literal character, class or . counts once per copy a repetition makes: [a-z0-9-]{1,63} is 63, ' +
  '[a-z0-9-]+ is 1; to select clusters by name, list them with a cluster-list rule)';

const tooLarge = (size: string) =>
  `pattern compiles to ${size} instructions; the limit is ${MAX_REGEX_PROGRAM_SIZE.toLocaleString('en')} ` +
  '(counted repetition such as {n,m} repeats what it applies to n to m times)';

/**
 * An estimate of the compiled program size from the pattern text, without
 * parsing it properly: every atom (literal, escape, class) counts 1, a group
 * the sum of its parts plus 2, `|` 1, `*` `+` `?` add 1, and `{n,m}` makes n
 * copies of what precedes it plus m - n optional ones (one more instruction
 * each). re2js simplifies some patterns further (`a|b` becomes a class), so
 * the estimate is mostly at or above the real size; it only has to catch the
 * patterns far over the limit before they are compiled. Malformed syntax is
 * left to re2js.
 */
export function estimateProgramSize(pattern: string): number {
  interface Frame {
    sum: number; // finished units of the current branch
    last: number; // the unit a quantifier would apply to
    lastIsChar: boolean; // `last` is one unquantified character or class
    lastRepeat: string; // `last` is x*, x+ or x? (a trailing `?`: non-greedy): that operator, else ''
    repeated: string; // for the quantifier just read: the lastRepeat of what it applies to
    onlyRepeat: string; // the finished branch was one unit with this lastRepeat
    branches: number; // finished branches (alternatives before a `|`)
    alternatives: number; // their summed size
    allChars: boolean; // every finished branch was one character or class
    capturing: boolean;
  }
  const frame = (capturing: boolean): Frame => ({
    sum: 0,
    last: 0,
    lastIsChar: false,
    lastRepeat: '',
    repeated: '',
    onlyRepeat: '',
    branches: 0,
    alternatives: 0,
    allChars: true,
    capturing,
  });
  const stack: Frame[] = [frame(false)];
  const top = () => stack[stack.length - 1]!;
  const unit = (weight: number, isChar = false) => {
    const f = top();
    f.sum += f.last;
    f.last = weight;
    f.lastIsChar = isChar;
    f.lastRepeat = '';
  };
  const endBranch = (f: Frame) => {
    f.allChars &&= f.sum === 0 && f.lastIsChar;
    f.onlyRepeat = f.sum === 0 ? f.lastRepeat : '';
    f.alternatives += f.sum + f.last;
    f.branches++;
    f.sum = 0;
    f.last = 0;
    f.lastIsChar = false;
  };
  // A group's size: its branches, one instruction per `|`; an alternation of
  // single characters (`a|b|[0-9]`) is one class after re2js simplifies it.
  const close = (f: Frame) => {
    endBranch(f);
    const body = f.branches > 1 && f.allChars ? 1 : f.alternatives + f.branches - 1;
    return body + (f.capturing ? 2 : 0);
  };
  const n = pattern.length;
  let i = 0;
  // A `?` right after a quantifier makes it non-greedy (Perl syntax has no `a**`): it costs nothing.
  let afterQuantifier = false;
  while (i < n) {
    const c = pattern[i]!;
    const lazy = afterQuantifier && c === '?';
    afterQuantifier = false;
    if (c === '\\') {
      const next = pattern[i + 1];
      if (next === 'Q') {
        const end = pattern.indexOf('\\E', i + 2);
        const stop = end < 0 ? n : end;
        // Literal characters; a quantifier after `\E` applies to the last one only.
        for (let k = i + 2; k < stop; k++) unit(1, true);
        i = end < 0 ? n : end + 2;
      } else if ((next === 'p' || next === 'P' || next === 'x') && pattern[i + 2] === '{') {
        const end = pattern.indexOf('}', i + 3);
        unit(1, true);
        i = end < 0 ? n : end + 1;
      } else {
        unit(1, next !== 'b' && next !== 'B' && next !== 'A' && next !== 'z');
        i += next === 'p' || next === 'P' ? 3 : 2;
      }
    } else if (c === '[') {
      let j = i + 1;
      if (pattern[j] === '^') j++;
      if (pattern[j] === ']') j++;
      while (j < n && pattern[j] !== ']') {
        if (pattern[j] === '\\') j += 2;
        else if (pattern[j] === '[' && pattern[j + 1] === ':') {
          const end = pattern.indexOf(':]', j + 2);
          j = end < 0 ? j + 1 : end + 2;
        } else j++;
      }
      unit(1, true);
      i = j + 1;
    } else if (c === '(') {
      let j = i + 1;
      let capturing = true;
      if (pattern[j] === '?') {
        j++;
        // `(?i)` sets flags and opens nothing; `(?i:` opens a plain group, `(?P<n>` and `(?<n>` a capture.
        while (j < n && /[a-zA-Z-]/.test(pattern[j]!)) j++;
        if (pattern[j] === ')') {
          i = j + 1;
          continue;
        }
        capturing = pattern[j] !== ':';
        // Past the `:` of `(?i:`, or past the name of `(?P<n>` / `(?<n>`.
        const gt = pattern.indexOf('>', j);
        i = capturing ? (gt < 0 ? n : gt + 1) : j + 1;
      } else i++;
      stack.push(frame(capturing));
    } else if (c === ')') {
      if (stack.length > 1) {
        const group = stack.pop()!;
        unit(close(group));
        // (?:x+)+ is x+ once compiled: a plain group of one repeat is that repeat.
        top().lastRepeat = !group.capturing && group.branches === 1 ? group.onlyRepeat : '';
      } else unit(1);
      i++;
    } else if (c === '|') {
      endBranch(top());
      i++;
    } else if (lazy) {
      // re2js drops a repeat of a repeat with the same operator and greediness: (?:x+?)+? is x+?.
      const f = top();
      if (f.lastRepeat) {
        const was = f.repeated === f.lastRepeat;
        f.lastRepeat += '?';
        const now = f.repeated === f.lastRepeat;
        f.last += (was ? 1 : 0) - (now ? 1 : 0);
      }
      i++;
    } else if (c === '*' || c === '+' || c === '?') {
      const f = top();
      f.repeated = f.lastRepeat;
      if (f.repeated !== c) f.last += 1;
      f.lastRepeat = c;
      f.lastIsChar = false;
      afterQuantifier = true;
      i++;
    } else if (c === '{') {
      const m = /^\{(\d+)(?:(,)(\d*))?\}/.exec(pattern.slice(i, i + 24));
      if (m) {
        // Counts over 1000 are re2js's (and Go's) own error; keep its message.
        const min = Math.min(Number(m[1]), 1000);
        const max = m[2] === undefined ? min : m[3] === '' ? undefined : Math.min(Number(m[3]), 1000);
        const f = top();
        // As compiled: the required copies, then each optional copy behind an alternation. Multiplying nested repeats by more than this would
        // compound over the levels and refuse small patterns such as ((a{2}){2}){2}.
        f.last =
          max === undefined
            ? Math.max(min, 1) * f.last + 1 // x{n,} is n-1 copies and x+
            : min * f.last + Math.max(0, max - min) * (f.last + 1);
        f.lastIsChar = false;
        f.lastRepeat = '';
        afterQuantifier = true;
        i += m[0].length;
      } else {
        unit(1, true);
        i++;
      }
    } else {
      unit(1, c !== '^' && c !== '$');
      i++;
    }
  }
  while (stack.length > 1) unit(close(stack.pop()!));
  // +3: the program prologue and match instruction re2js adds to every pattern.
  return close(top()) + 3;
}
