import { readFileSync } from 'node:fs';
import { EXIT_USAGE, explainFailure, isConfigurationError, UsageError, type Io } from './cli.js';
import { commands } from './commands/index.js';

const defaultIo: Io = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

export function helpText(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  const lines = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return `mco decides which Kubernetes clusters should run a workload right now.

Usage: mco <command> [options]

Commands:
${lines.join('\n')}

Run "mco <command> --help" for the options of a command; "mco --version" prints the version.
`;
}

/** mco's version: the package.json beside src/ and dist/ (the same relative path from both). */
export function version(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

/**
 * The last line of defence of a long-running mco process: a promise rejection
 * nobody handled, or an exception nobody caught, leaves the process in an
 * unknown state, so it is logged (one line, the error's message and stack) and
 * the process exits with 1; Kubernetes restarts it with clean caches.
 */
export function fatalHandler(
  io: Pick<Io, 'stderr'>,
  exit: (code: number) => void,
): (what: 'unhandledRejection' | 'uncaughtException', error: unknown) => void {
  return (what, error) => {
    const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
    io.stderr(
      `${JSON.stringify({ time: new Date().toISOString(), level: 'error', msg: `mco: ${what}; exiting`, error: detail })}\n`,
    );
    exit(1);
  };
}

/** Installs `fatalHandler` on the process (bin/mco.js does, before `main`). */
export function installProcessHandlers(io: Io = defaultIo): void {
  const fatal = fatalHandler(io, (code) => process.exit(code));
  process.on('unhandledRejection', (reason) => fatal('unhandledRejection', reason));
  process.on('uncaughtException', (error) => fatal('uncaughtException', error));
  // `mco simulate … | head`: the reader left; there is nothing more to say and nobody to say it to.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    fatal('uncaughtException', error);
  });
}

/** Runs the `mco` command line; returns the exit code. */
export async function main(argv: string[], io: Io = defaultIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout(helpText());
    return name === undefined ? EXIT_USAGE : 0;
  }
  if (name === '--version') {
    io.stdout(`${version()}\n`);
    return 0;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    io.stderr(`mco: unknown command "${name}"\n\n${helpText()}`);
    return EXIT_USAGE;
  }
  try {
    return await (await command.load()).run(rest, io);
  } catch (error) {
    // One line naming the thing and what to do; never a stack trace.
    io.stderr(`mco ${name}: ${error instanceof UsageError ? error.message : explainFailure(error)}\n`);
    return isConfigurationError(error) ? EXIT_USAGE : 1;
  }
}
