import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Ports handed out lately by this process: the OS may offer a port again as soon as it is released. */
const handedOut: number[] = [];

/**
 * A free TCP port on 127.0.0.1 (the OS picks it; callers retry if a race loses it), never one this
 * process got lately: two calls in a row (a server's health and storage ports) get two ports.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await osPort();
    if (handedOut.includes(port)) continue;
    handedOut.push(port);
    if (handedOut.length > 256) handedOut.shift();
    return port;
  }
}

function osPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly logFile: string;
  /** Resolves when the process has exited (immediately if it already has). */
  readonly exited: Promise<void>;
  hasExited(): boolean;
}

/**
 * Starts a server binary in its own process group with output appended to a
 * log file (no pipes, so it never blocks on, or dies with, our streams);
 * `env` is added to this process's environment; `cwd` is its working directory.
 * Every group started here dies with this process, however it ends (SIGKILL
 * included): see `ProcessReaper`; `stopServer` stops it earlier.
 */
export function startServer(
  binary: string,
  args: readonly string[],
  logFile: string,
  env: Readonly<Record<string, string>> = {},
  cwd?: string,
): ServerProcess {
  const fd = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(binary, args, { cwd, detached: true, stdio: ['ignore', fd, fd], env: { ...process.env, ...env } });
  } finally {
    closeSync(fd);
  }
  child.unref();
  serversReaper().track(child.pid);
  let done = false;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      done = true;
      resolve();
    });
    child.once('error', () => {
      done = true;
      resolve();
    });
  });
  return { child, logFile, exited, hasExited: () => done };
}

/** Signals a whole process group; a group that is already gone is fine. */
export function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: already gone.
  }
}

/** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
export async function stopServer(server: ServerProcess, graceMs: number): Promise<void> {
  if (server.hasExited()) return;
  server.child.ref(); // keep the event loop alive until the exit arrives
  killGroup(server.child.pid, graceMs > 0 ? 'SIGTERM' : 'SIGKILL');
  if (graceMs > 0) {
    const timer = setTimeout(() => killGroup(server.child.pid, 'SIGKILL'), graceMs);
    await server.exited;
    clearTimeout(timer);
  } else {
    await server.exited;
  }
  serversReaper().untrack(server.child.pid);
}

export function tailOf(logFile: string, lines = 25): string {
  try {
    return readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

// --- cleanup when the test process dies without calling stop() --------------

/**
 * A detached POSIX shell (dash: `kill -s KILL -- -PGID` is the portable form) that outlives us: once our process is gone (even by
 * SIGKILL, which runs no exit hook) it kills every process group listed in
 * `<dir>/pids` and removes `dir`. It exits on its own when `dir/pids` goes away
 * (normal stop).
 */
const WATCHDOG = `
parent="$1"; dir="$2"
while kill -0 "$parent" 2>/dev/null && [ -e "$dir/pids" ]; do sleep 1; done
[ -e "$dir/pids" ] || exit 0
while read -r pid; do [ -n "$pid" ] && kill -s KILL -- "-$pid" 2>/dev/null; done < "$dir/pids"
rm -rf "$dir"
`;

/** Live temp dirs and their process groups, for the synchronous exit hook. */
const live = new Map<string, Set<number>>();
let hooked = false;

function onExit(): void {
  for (const [dir, pids] of live) {
    for (const pid of pids) killGroup(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
  live.clear();
}

/** Tracks the process groups that live in `dir` and must die with this process. */
export class ProcessReaper {
  private readonly pids = new Set<number>();
  private readonly watchdog: ChildProcess;

  constructor(private readonly dir: string) {
    this.writePids();
    live.set(dir, this.pids);
    if (!hooked) {
      hooked = true;
      process.once('exit', onExit);
    }
    this.watchdog = spawn('sh', ['-c', WATCHDOG, 'mco-testkit-watchdog', String(process.pid), dir], {
      detached: true,
      stdio: 'ignore',
    });
    this.watchdog.unref();
  }

  track(pid: number | undefined): void {
    if (pid === undefined) return;
    this.pids.add(pid);
    this.writePids();
  }

  untrack(pid: number | undefined): void {
    if (pid === undefined) return;
    this.pids.delete(pid);
    this.writePids();
  }

  /** Kills whatever is still tracked, removes the dir and dismisses the watchdog. */
  dispose(): void {
    for (const pid of this.pids) killGroup(pid, 'SIGKILL');
    this.pids.clear();
    live.delete(this.dir);
    rmSync(this.dir, { recursive: true, force: true });
    killGroup(this.watchdog.pid, 'SIGKILL');
  }

  private writePids(): void {
    writeFileSync(join(this.dir, 'pids'), [...this.pids].map((pid) => `${pid}\n`).join(''));
  }
}

let servers: ProcessReaper | undefined;

/** The reaper of every server this process started (created with the first one). */
function serversReaper(): ProcessReaper {
  servers ??= new ProcessReaper(mkdtempSync(join(tmpdir(), 'mco-testkit-servers-')));
  return servers;
}
