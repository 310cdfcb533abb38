import { readFile } from 'node:fs/promises';
import { parseProviderFile, type ProviderFile } from '@mco/cluster-access';
import { UsageError } from '../cli.js';

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
