import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const OUT_DIR = fileURLToPath(new URL('../node_modules/.cache/mco-test-processes/', import.meta.url));

/** Bundles a script with tsup (the @mco packages from source; node_modules stay external) and returns its path. */
export async function bundleScript(entry: URL, name: string): Promise<string> {
  const { build } = await import('tsup');
  await build({
    entry: { [name]: fileURLToPath(entry) },
    outDir: OUT_DIR,
    format: ['esm'],
    platform: 'node',
    target: 'node20',
    noExternal: [/^@mco\//],
    skipNodeModulesBundle: true,
    esbuildOptions: (options) => void (options.conditions = ['@mco/source']),
    silent: true,
  });
  return `${OUT_DIR}${name}.js`;
}

/** A forked script that sends `{ id: 0 }` once started and answers `{ id, command }` with `{ id, value }`. */
export interface ScriptProcess {
  readonly child: ChildProcess;
  call<T>(command: string): Promise<T>;
}

export function forkScript(script: string, env: Record<string, string>): Promise<ScriptProcess> {
  const child = fork(script, { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map<number, (value: unknown) => void>();
  let next = 1;
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`${script} exited (${signal ?? code}) before it started`)));
    child.on('message', (m: { id: number; value: unknown }) => {
      if (m.id === 0) {
        resolve({
          child,
          call: <T>(command: string) =>
            new Promise<T>((done) => {
              const id = next++;
              waiting.set(id, done as (value: unknown) => void);
              child.send({ id, command });
            }),
        });
      } else {
        waiting.get(m.id)?.(m.value);
        waiting.delete(m.id);
      }
    });
  });
}
