/** Milliseconds since the epoch of an RFC 3339 timestamp, or undefined when unparsable. */
export function parseTime(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/** RFC 3339 with second precision, as Kubernetes serialises metav1.Time. */
export function formatTime(ms: number): string {
  return new Date(ms - (ms % 1000)).toISOString().replace('.000Z', 'Z');
}

export const SECOND = 1000;
