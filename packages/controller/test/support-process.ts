import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A forked script that sends `{ id: 0 }` once started and answers `{ id, command }` with `{ id, value }`. */
export interface ScriptProcess {
  readonly child: ChildProcess;
  call<T>(command: string): Promise<T>;
}

/**
 * Forks a TypeScript script, loaded through tsx with the @mco packages from
 * source, so that a test never builds anything before it runs.
 */
export function forkScript(entry: URL, env: Record<string, string>): Promise<ScriptProcess> {
  const script = fileURLToPath(entry);
  const child = fork(script, {
    execArgv: ['--conditions=@mco/source', '--import', 'tsx'],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
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
