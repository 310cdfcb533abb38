// Shared by the end-to-end suites that run real Flux controllers.

/** Polls `probe` until `accept` holds; on timeout the error names what and the last value seen. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 120_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await probe().catch(() => undefined as T);
    if (last !== undefined && accept(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
