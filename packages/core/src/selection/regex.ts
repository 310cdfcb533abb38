import { RE2JS } from 're2js';
import { MAX_REGEX_LENGTH } from '../api/placement.js';
import { err, ok, type Result } from '../result.js';

/** A compiled Go-RE2 pattern; `test` is unanchored like Go's `regexp.MatchString`. */
export interface Re2Pattern {
  readonly source: string;
  test(input: string): boolean;
}

// Compiling is far costlier than matching, and a fleet re-evaluates the same
// few patterns constantly. The cache only memoises a pure function.
const CACHE_LIMIT = 512;
const cache = new Map<string, Result<Re2Pattern, string>>();

/**
 * Compiles `pattern` with Go's RE2 syntax and semantics (re2js), never with the
 * JavaScript RegExp engine: no backreferences, no lookaround, linear time.
 */
export function compileRe2(pattern: string): Result<Re2Pattern, string> {
  const hit = cache.get(pattern);
  if (hit) return hit;
  const result = compileUncached(pattern);
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  cache.set(pattern, result);
  return result;
}

function compileUncached(pattern: string): Result<Re2Pattern, string> {
  if (pattern.length > MAX_REGEX_LENGTH) {
    return err(`pattern is ${pattern.length} characters long; the limit is ${MAX_REGEX_LENGTH}`);
  }
  try {
    const compiled = RE2JS.compile(pattern);
    return ok({ source: pattern, test: (input: string) => compiled.test(input) });
  } catch (error) {
    return err(error instanceof Error ? error.message : String(error));
  }
}
