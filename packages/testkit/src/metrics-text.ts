/**
 * The `name{labels} value` lines of a Prometheus text exposition (an API
 * server's /metrics), summed by the key `by` makes of each line's labels;
 * lines for which `by` returns undefined are left out.
 */
export function metricSums(
  text: string,
  name: string,
  by: (labels: Record<string, string>) => string | undefined,
): Map<string, number> {
  const sums = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.lastIndexOf('}');
    const labels = Object.fromEntries(
      [...line.slice(name.length + 1, close).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]),
    );
    const key = by(labels);
    if (key !== undefined) sums.set(key, (sums.get(key) ?? 0) + Number(line.slice(close + 1)));
  }
  return sums;
}
