/**
 * Polls `probe` every `intervalMs` until `accept` holds, and returns that
 * value: tests wait on conditions, never on fixed sleeps. A probe that throws
 * counts as not yet. On timeout the error names what was awaited and the last
 * value seen.
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 20_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await probe().catch(() => undefined as T);
    if (last !== undefined && accept(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
