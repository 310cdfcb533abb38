import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../../../', import.meta.url));

export interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly private?: boolean;
  readonly repository?: { readonly type?: string; readonly url?: string; readonly directory?: string };
  readonly scripts?: Readonly<Record<string, string>>;
  readonly files?: readonly string[];
  readonly exports?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly main?: string;
  readonly types?: string;
  readonly typesVersions?: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
  readonly peerDependenciesMeta?: Readonly<Record<string, { readonly optional?: boolean }>>;
  readonly devDependencies?: Readonly<Record<string, string>>;
}

/**
 * Every publishable workspace (package.json without `"private": true`) of the
 * root's `workspaces` globs, as tools/npm-packages/build.sh finds them: a new
 * package is covered without editing any list.
 */
export function publishableWorkspaces(): { dir: string; manifest: Manifest }[] {
  const root = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { workspaces: string[] };
  return root.workspaces.flatMap((glob) => {
    const parent = glob.replace(/\/\*$/, '');
    return readdirSync(join(REPO, parent))
      .sort()
      .map((name) => join(parent, name))
      .filter((dir) => existsSync(join(REPO, dir, 'package.json')))
      .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(REPO, dir, 'package.json'), 'utf8')) as Manifest }))
      .filter(({ manifest }) => manifest.private !== true);
  });
}

/** Runs a command (`env` added to ours); resolves with its stdout, rejects with its output when it fails. */
export function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: Readonly<Record<string, string>> = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${out}${err}`)),
    );
  });
}

/**
 * The lowest version of each peer dependency that every package's range
 * allows: the highest of their `^x.y.z` floors.
 */
export function lowestPeers(manifests: readonly Manifest[]): Record<string, string> {
  const parts = (v: string) => v.split('.').map(Number);
  const newer = (a: string, b: string) => {
    const [x, y] = [parts(a), parts(b)];
    const i = x.findIndex((n, k) => n !== y[k]);
    return i >= 0 && x[i]! > y[i]!;
  };
  const floors: Record<string, string> = {};
  for (const manifest of manifests) {
    for (const [name, range] of Object.entries(manifest.peerDependencies ?? {})) {
      const floor = /^\^(\d+\.\d+\.\d+)$/.exec(range)?.[1];
      if (!floor) throw new Error(`${manifest.name}: peer ${name} "${range}" is not a ^x.y.z range`);
      if (!floors[name] || newer(floor, floors[name])) floors[name] = floor;
    }
  }
  return floors;
}

/** The publishable packages a program can import (`exports`): all but the `mco` command. */
export function libraryNames(): string[] {
  return publishableWorkspaces()
    .filter(({ manifest }) => manifest.exports !== undefined)
    .map(({ manifest }) => manifest.name);
}
