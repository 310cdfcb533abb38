// A bit-parallel simulation of a compiled re2js program, for `test` only
// (is there a match anywhere?). re2js's own engines cost what the pattern
// makes them cost: its lazy DFA builds a state per character for patterns
// such as `[0-9][a-z0-9-]{20}9`, its NFA steps every live thread one by one,
// and `[\pL\pN\pP\pS]{1000}` on 1,000 names of 317 characters took seconds
// with either. Here the live threads are one bit each, and one character
// costs at most `positions / 8` table lookups of two words, whatever the
// pattern: the cost is bounded by the program's positions
// (`MAX_REGEX_POSITIONS`, 64) and the name's length.
//
// The program is re2js's, so parsing, simplification, Unicode classes, case
// folding and the empty-width assertions keep Go's RE2 semantics; the tests
// compare every answer with re2js's on the Go vectors and random patterns.

/** The parts of a re2js instruction read here (re2js's `Inst`, internal; the tests check it). */
interface Inst {
  readonly op: number;
  readonly out: number;
  readonly arg: number;
  readonly runes: Int32Array;
  matchRune(rune: number): boolean;
}
/** The parts of a re2js program read here (re2js's `Prog`). */
export interface Re2Program {
  readonly inst: readonly Inst[];
  readonly start: number;
}

// re2js's opcodes (Inst.ALT ... Inst.RUNE_ANY_NOT_NL; RUNE1, 9, is a position like RUNE).
const ALT = 1;
const ALT_MATCH = 2;
const CAPTURE = 3;
const EMPTY_WIDTH = 4;
const FAIL = 5;
const MATCH = 6;
const NOP = 7;
const RUNE = 8;
const RUNE_ANY = 10;
const RUNE_ANY_NOT_NL = 11;
// Go's empty-width flags (re2js's Utils.EMPTY_*).
const BEGIN_LINE = 1;
const END_LINE = 2;
const BEGIN_TEXT = 4;
const END_TEXT = 8;
const WORD_BOUNDARY = 16;
const NO_WORD_BOUNDARY = 32;

/** Live threads are grouped by this many bits; a group's successors are one table lookup. */
const GROUP_BITS = 8;
const GROUPS_PER_WORD = 32 / GROUP_BITS;
/** Live threads fit two 32-bit words: `MAX_REGEX_POSITIONS` is 64, and `test` keeps them in two variables. */
const WORDS = 2;
export const MAX_BIT_POSITIONS = 32 * WORDS;
const GROUP_VALUES = 1 << GROUP_BITS;
const ASCII = 128;
const OTHER_MASKS = 256;

/** The positions (rune instructions) of a program: what a match's cost grows with. */
export function countPositions(program: Re2Program): number {
  return program.inst.filter((i) => i.op >= RUNE && i.op <= RUNE_ANY_NOT_NL).length;
}

/** What the empty-width assertions see between runes `before` and `after` (-1: the text's edge), as Go defines it. */
function emptyContext(before: number, after: number): number {
  let flags = 0;
  if (before < 0) flags |= BEGIN_TEXT | BEGIN_LINE;
  else if (before === 10) flags |= BEGIN_LINE;
  if (after < 0) flags |= END_TEXT | END_LINE;
  else if (after === 10) flags |= END_LINE;
  return flags | (isWordRune(before) !== isWordRune(after) ? WORD_BOUNDARY : NO_WORD_BOUNDARY);
}

const isWordRune = (r: number) => (r >= 48 && r <= 57) || (r >= 65 && r <= 90) || (r >= 97 && r <= 122) || r === 95;

/** Per empty-width context: where a thread goes next, by group of live positions. */
interface Steps {
  /** Threads started here (the unanchored search starts one at every offset). */
  readonly start: Int32Array;
  readonly startMatches: boolean;
  /** [group][value][word]: the union of the successors of the positions set in `value`. */
  readonly follow: Int32Array;
  /** [group][value]: whether one of them reaches the match. */
  readonly followMatches: Uint8Array;
}

/**
 * A matcher for `program`: `test` is unanchored, like Go's
 * `regexp.MatchString`. A class, not a closure: V8 then shares one optimised
 * `test` (and its type feedback) among all patterns, so a new pattern's first
 * evaluation does not start in the interpreter. Throws on an instruction it
 * does not know (re2js's lookbehinds, which Go's syntax does not have).
 */
export class BitMatcher {
  private readonly inst: readonly Inst[];
  private readonly start: number;
  private readonly positions: readonly number[];
  private readonly positionOf: Int32Array;
  /** Groups of `GROUP_BITS` positions in use. */
  private readonly groups: number;
  /** The empty-width flags the program asks about: only they tell contexts apart. */
  private readonly usedFlags: number;
  private readonly asciiMasks: Int32Array;
  /** Masks of the runes beyond ASCII met so far (Kubernetes names have none), up to `OTHER_MASKS`. */
  private readonly otherMasks = new Map<number, Int32Array>();
  private readonly steps: (Steps | undefined)[] = new Array<Steps | undefined>(64).fill(undefined);
  /** No thread starts after the first offset (the pattern begins with ^ or \A): once none is live, none will be. */
  private readonly onlyAtBegin: boolean;
  private readonly seen: Uint32Array;
  private generation = 0;

  constructor(program: Re2Program) {
    this.inst = program.inst;
    this.start = program.start;
    this.positionOf = new Int32Array(this.inst.length).fill(-1);
    const positions: number[] = [];
    let usedFlags = 0;
    for (const [pc, i] of this.inst.entries()) {
      if (i.op >= RUNE && i.op <= RUNE_ANY_NOT_NL) {
        this.positionOf[pc] = positions.length;
        positions.push(pc);
      } else if (i.op === EMPTY_WIDTH) usedFlags |= i.arg;
      else if (i.op < ALT || i.op > NOP) throw new Error(`unsupported instruction ${i.op}`);
    }
    this.positions = positions;
    this.usedFlags = usedFlags;
    if (positions.length > MAX_BIT_POSITIONS)
      throw new Error(`${positions.length} positions; the matcher holds ${MAX_BIT_POSITIONS}`);
    this.groups = Math.max(1, Math.ceil(positions.length / GROUP_BITS));
    this.asciiMasks = new Int32Array(ASCII * WORDS);
    for (let r = 0; r < ASCII; r++) this.maskOf(r, this.asciiMasks, r * WORDS);
    this.seen = new Uint32Array(this.inst.length);
    const restart = new Int32Array(WORDS);
    this.onlyAtBegin = !this.closure(this.start, 63 & ~BEGIN_TEXT, restart, 0) && restart.every((w) => w === 0);
  }

  test(input: string): boolean {
    const { asciiMasks, usedFlags } = this;
    const length = input.length;
    let rune = length > 0 ? input.codePointAt(0)! : -1;
    let steps = this.stepsFor(emptyContext(-1, rune));
    if (steps.startMatches) return true;
    let live0 = steps.start[0]!;
    let live1 = steps.start[1]!;
    for (let offset = 0; offset < length;) {
      const after = offset + (rune > 0xffff ? 2 : 1);
      let following = after < length ? input.charCodeAt(after) : -1;
      if (following >= 0xd800 && following <= 0xdbff) following = input.codePointAt(after)!;
      let masks = asciiMasks;
      let at = rune * WORDS;
      if (rune >= ASCII) {
        masks = this.otherMasks.get(rune) ?? this.otherMaskOf(rune);
        at = 0;
      }
      if (usedFlags !== 0)
        steps = this.steps[emptyContext(rune, following) & usedFlags] ?? this.stepsFor(emptyContext(rune, following));
      const { follow, followMatches, start } = steps;
      let next0 = start[0]!;
      let next1 = start[1]!;
      let matches = steps.startMatches;
      const bits0 = live0 & masks[at]!;
      const bits1 = live1 & masks[at + 1]!;
      // Each group of 8 live positions: one row of the table, the union of their successors.
      for (let g = 0, bits = bits0; bits !== 0; g++, bits >>>= GROUP_BITS) {
        const row = g * GROUP_VALUES + (bits & (GROUP_VALUES - 1));
        next0 |= follow[row * WORDS]!;
        next1 |= follow[row * WORDS + 1]!;
        matches ||= followMatches[row] === 1;
      }
      for (let g = GROUPS_PER_WORD, bits = bits1; bits !== 0; g++, bits >>>= GROUP_BITS) {
        const row = g * GROUP_VALUES + (bits & (GROUP_VALUES - 1));
        next0 |= follow[row * WORDS]!;
        next1 |= follow[row * WORDS + 1]!;
        matches ||= followMatches[row] === 1;
      }
      if (matches) return true;
      if ((bits0 | bits1) === 0 && this.onlyAtBegin) return false;
      live0 = next0;
      live1 = next1;
      offset = after;
      rune = following;
    }
    return false;
  }

  private otherMaskOf(rune: number): Int32Array {
    const mask = new Int32Array(WORDS);
    this.maskOf(rune, mask, 0);
    if (this.otherMasks.size < OTHER_MASKS) this.otherMasks.set(rune, mask);
    return mask;
  }

  private accepts(pc: number, rune: number): boolean {
    const i = this.inst[pc]!;
    if (i.op === RUNE_ANY) return true;
    if (i.op === RUNE_ANY_NOT_NL) return rune !== 10;
    return i.matchRune(rune);
  }

  private maskOf(rune: number, into: Int32Array, at: number): void {
    for (const [p, pc] of this.positions.entries()) if (this.accepts(pc, rune)) into[at + (p >>> 5)]! |= 1 << (p & 31);
  }

  /** Where a thread at `pc` can be after the empty-width steps `context` allows; whether it can reach the match. */
  private closure(pc: number, context: number, into: Int32Array, at: number): boolean {
    const { inst, seen } = this;
    const generation = ++this.generation;
    let matches = false;
    const stack = [pc];
    while (stack.length > 0) {
      const next = stack.pop()!;
      if (seen[next] === generation) continue;
      seen[next] = generation;
      const i = inst[next]!;
      switch (i.op) {
        case ALT:
        case ALT_MATCH:
          stack.push(i.arg, i.out);
          break;
        case CAPTURE:
        case NOP:
          stack.push(i.out);
          break;
        case EMPTY_WIDTH:
          if ((i.arg & ~context) === 0) stack.push(i.out);
          break;
        case MATCH:
          matches = true;
          break;
        case FAIL:
          break;
        default: {
          const p = this.positionOf[next]!;
          into[at + (p >>> 5)]! |= 1 << (p & 31);
        }
      }
    }
    return matches;
  }

  private stepsFor(context: number): Steps {
    const key = context & this.usedFlags;
    const known = this.steps[key];
    if (known) return known;
    const { groups, positions } = this;
    const words = WORDS;
    const start = new Int32Array(words);
    const startMatches = this.closure(this.start, key, start, 0);
    const successors = new Int32Array(positions.length * words);
    const reachesMatch = new Uint8Array(positions.length);
    for (const [p, pc] of positions.entries())
      reachesMatch[p] = this.closure(this.inst[pc]!.out, key, successors, p * words) ? 1 : 0;
    const follow = new Int32Array(groups * GROUP_VALUES * words);
    const followMatches = new Uint8Array(groups * GROUP_VALUES);
    for (let g = 0; g < groups; g++) {
      for (let value = 1; value < GROUP_VALUES; value++) {
        // The union for `value` is the one for `value` without its lowest bit, plus that bit's position.
        const p = g * GROUP_BITS + 31 - Math.clz32(value & -value);
        const rest = value & (value - 1);
        const to = (g * GROUP_VALUES + value) * words;
        const from = (g * GROUP_VALUES + rest) * words;
        for (let w = 0; w < words; w++) follow[to + w] = follow[from + w]!;
        followMatches[g * GROUP_VALUES + value] = followMatches[g * GROUP_VALUES + rest]!;
        if (p >= positions.length) continue;
        for (let w = 0; w < words; w++) follow[to + w]! |= successors[p * words + w]!;
        if (reachesMatch[p]) followMatches[g * GROUP_VALUES + value] = 1;
      }
    }
    const steps = { start, startMatches, follow, followMatches };
    this.steps[key] = steps;
    return steps;
  }
}
