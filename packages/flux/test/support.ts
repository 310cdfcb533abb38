// Shared by the end-to-end suites that run real Flux controllers.
import { eventually as waitFor } from '@mco/testkit';

/** `eventually` of @mco/testkit with the Flux suites' defaults: real controllers take their time. */
export const eventually = <T>(
  what: string,
  probe: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 120_000,
): Promise<T> => waitFor(what, probe, accept, timeoutMs, 200);
