import { readFile } from 'node:fs/promises';
import { parseProviderFile, type ProviderFile } from '@mco/cluster-access';
import type { LogLevel } from '@mco/runtime';
import { UsageError } from '../cli.js';

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** `--log-level`, checked. */
export function parseLogLevel(text: string): LogLevel {
  if (!LOG_LEVELS.includes(text as LogLevel))
    throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`);
  return text as LogLevel;
}

/** `--access-providers a,b` as names, or undefined when not given. */
export function parseAccessProviders(text: string | undefined): string[] | undefined {
  const names = text
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return names?.length ? names : undefined;
}

/** The Cluster Inventory access-provider file of `--provider-file`; a bad file is a usage error. */
export async function readProviderFile(path: string): Promise<ProviderFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    return parseProviderFile(text, path);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** Resolves on the first SIGTERM or SIGINT. */
export function untilSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
}
