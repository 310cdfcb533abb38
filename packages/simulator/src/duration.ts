import { z } from 'zod';

const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400 };
const DURATION = /^(?:\d+(?:\.\d+)?[smhd])+$/;
const PART = /(\d+(?:\.\d+)?)([smhd])/g;

/** Seconds of a duration such as `90s`, `5m`, `1h30m` or `2d`; undefined when unreadable. */
export function parseDuration(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let seconds = 0;
  for (const [, amount, unit] of text.matchAll(PART)) seconds += Number(amount) * UNIT_SECONDS[unit!]!;
  return seconds;
}

/** A duration in a scenario: a number of seconds or a string like `30s`, `5m`, `2h`, `1h30m`. */
const EXPECTED = 'a duration such as 30s, 5m, 2h or 1h30m, or a number of seconds';

export const DurationSchema = z
  .union([z.number(), z.string()], {
    error: (issue) => (issue.input === undefined ? `required: ${EXPECTED}` : `expected ${EXPECTED}`),
  })
  .transform((value, ctx) => {
    const seconds = typeof value === 'number' ? value : parseDuration(value.trim());
    if (seconds === undefined || !Number.isFinite(seconds) || seconds < 0) {
      ctx.addIssue({
        code: 'custom',
        message: `expected ${EXPECTED}; got ${JSON.stringify(value)}`,
      });
      return z.NEVER;
    }
    return Math.round(seconds);
  });

/** `HH:MM:SS` since the start of the simulation (hours may pass 24). */
export function formatElapsed(seconds: number): string {
  const s = Math.round(seconds);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(Math.floor(s / 3600))}:${pad(Math.floor((s % 3600) / 60))}:${pad(s % 60)}`;
}

/** A short human duration: `45s`, `7m30s`, `2h05m`. */
export function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? `${String(s % 60).padStart(2, '0')}s` : ''}`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
