import { readFile } from 'node:fs/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';

/** A subcommand of `mco`. Each lives in its own file under commands/. */
export interface Command {
  readonly name: string;
  /** One line for `mco --help`. */
  readonly summary: string;
  /** The full `mco <name> --help` text. */
  readonly usage: string;
  run(argv: string[], io: Io): Promise<number>;
}

export interface Io {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

/** Exit codes: 0 success, 1 runtime failure, 2 bad usage or bad input. */
export const EXIT_USAGE = 2;

/** An error that maps to exit code 2 with a message naming what is wrong. */
export class UsageError extends Error {}

/** Reads a JSON or YAML file ("-" for stdin); a syntax error becomes a UsageError naming the file. */
export async function readDocument(path: string): Promise<unknown> {
  let text: string;
  try {
    text = path === '-' ? await readStdin() : await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    return extname(path) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new UsageError(
      `${path} is not valid ${extname(path) === '.json' ? 'JSON' : 'YAML'}: ${(error as Error).message}`,
    );
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** `a.b[0].c` from a zod issue path. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (out, part) => (typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part)),
    '',
  );
}

/** Parses with a zod schema or throws a UsageError naming the first offending field. */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues
    .slice(0, 5)
    .map((issue) => `${formatPath(issue.path) || '(root)'}: ${issue.message}`)
    .join('; ');
  throw new UsageError(`invalid ${what}: ${issues}`);
}

/**
 * The hub kubeconfig: a file, or in-cluster / $KUBECONFIG / ~/.kube/config;
 * optionally a context of it. A broken kubeconfig is a UsageError.
 */
export function loadKubeConfig(path: string | undefined, context?: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  try {
    if (path) kubeConfig.loadFromFile(path);
    else kubeConfig.loadFromDefault();
  } catch (error) {
    throw new UsageError(`cannot load the kubeconfig${path ? ` ${path}` : ''}: ${(error as Error).message}`);
  }
  if (context) {
    if (!kubeConfig.getContextObject(context)) throw new UsageError(`context "${context}" not found in the kubeconfig`);
    kubeConfig.setCurrentContext(context);
  }
  return kubeConfig;
}
