// Runs a doc's code blocks in order, as a user would type them (docs/testing.md,
// "Walk-throughs"): shell blocks in bash, long-running commands in the
// background, YAML blocks saved where the doc says, expected output checked,
// every block accounted for.
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, isAbsolute, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { ProcessReaper, startServer, stopServer, tailOf, type ServerProcess } from './processes.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

/** What a block's `<!-- walkthrough: ... -->` marker asks for; no marker: a shell block runs. */
export type Directive =
  | { readonly action: 'skip'; readonly reason: string }
  | { readonly action: 'background' }
  | { readonly action: 'file'; readonly name: string }
  | { readonly action: 'expect' }
  | { readonly action: 'fragment-of'; readonly path: string };

export interface DocBlock {
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** The fence's info string (`sh`, `yaml`, ...; empty when none). */
  readonly lang: string;
  /** The content, dedented to the fence's indentation. */
  readonly text: string;
  readonly directive?: Directive;
  /** The prose between the previous block and this one, without markers (what tells the user what to do with it). */
  readonly prose: string;
}

const SHELL = new Set(['sh', 'bash', 'shell']);
const MARKER = /^<!--\s*walkthrough:\s*(\S+)\s*(.*?)\s*-->$/;

/** The fenced code blocks of a Markdown text, in order, with their walk-through markers. */
export function parseDocBlocks(markdown: string, source = 'the doc'): DocBlock[] {
  const lines = markdown.split('\n');
  const blocks: DocBlock[] = [];
  let proseStart = 0;
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)(`{3,}|~{3,})\s*([\w-]*)[^`]*$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, lang] = open as unknown as [string, string, string, string];
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = new RegExp(`^ *${fence[0]}{${fence.length},}\\s*$`).exec(lines[j]!);
      if (close) break;
      body.push(lines[j]!);
    }
    if (j >= lines.length) throw new Error(`${source}:${i + 1}: code block never closed`);
    const prose = lines.slice(proseStart, i);
    blocks.push({
      line: i + 1,
      lang: lang.toLowerCase(),
      text: body.map((l) => l.slice(Math.min(indent.length, l.length - l.trimStart().length))).join('\n'),
      directive: directiveOf(prose, `${source}:${i + 1}`),
      prose: prose.filter((l) => !MARKER.test(l.trim())).join('\n'),
    });
    proseStart = j + 1;
    i = j;
  }
  return blocks;
}

/** The marker on the last non-blank line before a block, if any. */
function directiveOf(prose: string[], where: string): Directive | undefined {
  const last = [...prose].reverse().find((l) => l.trim() !== '');
  const marker = last === undefined ? null : MARKER.exec(last.trim());
  if (!marker) return undefined;
  const [, action, arg] = marker as unknown as [string, string, string];
  switch (action) {
    case 'skip':
      if (!arg) throw new Error(`${where}: "walkthrough: skip" needs a reason`);
      return { action, reason: arg };
    case 'background':
    case 'expect':
      return { action };
    case 'file':
      if (!arg) throw new Error(`${where}: "walkthrough: file" needs a file name`);
      return { action, name: arg };
    case 'fragment-of':
      if (!arg) throw new Error(`${where}: "walkthrough: fragment-of" needs a repository path`);
      return { action, path: arg };
    default:
      throw new Error(
        `${where}: unknown walk-through marker "${action}" (skip, background, file, expect, fragment-of)`,
      );
  }
}

/** The commands of a shell text, one per logical line (a trailing `\` continues it); comments dropped. */
export function commandsOf(script: string): string[] {
  return script
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
}

/**
 * One entry of a doc's substitution table. Only what differs on a test
 * machine may be substituted: a path, a port, a server's address (its URL:
 * the doc's `https://east.clusters.example:6443` is a test apiserver's
 * `https://127.0.0.1:<port>`) or a token.
 */
export interface Substitution {
  readonly kind: 'path' | 'port' | 'address' | 'token';
  /** Replaced everywhere in every block (a string: each occurrence; a RegExp should be global). */
  readonly from: string | RegExp;
  readonly to: string;
}

export function substitute(text: string, table: readonly Substitution[]): string {
  return table.reduce(
    (out, s) => (typeof s.from === 'string' ? out.split(s.from).join(s.to) : out.replace(s.from, s.to)),
    text,
  );
}

/** Is `fragment` (parsed YAML) contained in `whole`: every key present and contained, every list item in the list? */
export function containsFragment(whole: unknown, fragment: unknown): boolean {
  if (Array.isArray(fragment)) {
    return Array.isArray(whole) && fragment.every((item) => whole.some((w) => containsFragment(w, item)));
  }
  if (fragment !== null && typeof fragment === 'object') {
    if (whole === null || typeof whole !== 'object' || Array.isArray(whole)) return false;
    const w = whole as Record<string, unknown>;
    return Object.entries(fragment).every(([k, v]) => k in w && containsFragment(w[k], v));
  }
  return whole === fragment;
}

/** Whether `fragment` is contained in some node of `tree` (at any depth). */
function foundIn(tree: unknown, fragment: unknown): boolean {
  if (containsFragment(tree, fragment)) return true;
  if (tree !== null && typeof tree === 'object') return Object.values(tree).some((v) => foundIn(v, fragment));
  return false;
}

export type Outcome = 'ran' | 'background' | 'file' | 'expected' | 'fragment' | 'skipped';

export interface BlockReport {
  readonly line: number;
  readonly lang: string;
  readonly outcome: Outcome;
  /** The skip reason, the file written, the fragment's source, the commands started. */
  readonly detail?: string;
}

export interface WalkthroughOptions {
  /** The Markdown file. */
  readonly doc: string;
  /** The working directory every command runs in (the user's directory); created if missing. */
  readonly dir: string;
  /** The doc's substitution table; every entry must match somewhere in the doc's blocks. */
  readonly substitutions?: readonly Substitution[];
  /**
   * Commands put first on `PATH` for the doc's shell blocks: a path (linked
   * under that name) or an argument vector (a wrapper that runs it with the
   * block's arguments, e.g. `mco` → `[node, apps/mco/bin/mco.js]`).
   */
  readonly commands?: Readonly<Record<string, string | readonly string[]>>;
  /** Added to every command's environment (e.g. `KUBECONFIG` for the doc's `kubectl`). */
  readonly env?: Readonly<Record<string, string>>;
  /** The time a foreground block may take (default 120 s), and an expected output may take to appear (default 240 s). */
  readonly timeoutMs?: number;
  readonly expectTimeoutMs?: number;
  /** Where `fragment-of` paths are resolved (default: the repository root). */
  readonly root?: string;
  /**
   * An `expect` block must be the whole output, line for line (whitespace
   * collapsed, timestamps and ages normalised, see `normalizeOutputLine`),
   * not only contained in it: a sample that shows one Secret where there are
   * two fails.
   */
  readonly exactOutput?: boolean;
}

/**
 * One output line as a sample is compared: whitespace collapsed, RFC 3339
 * timestamps and kubectl ages (`5s`, `2m3s`, `4h`, `3d`) replaced by placeholders.
 */
export function normalizeOutputLine(line: string): string {
  return collapse(line)
    .replace(/\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})/g, '<time>')
    .replace(/(^| )(\d+[smhd])+(?= |$)/g, '$1<age>');
}

interface Result {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

const collapse = (line: string) => line.trim().replace(/\s+/g, ' ');

/**
 * A doc's walk-through, run block by block. Conventions (docs/testing.md):
 * a shell block runs in `bash -eo pipefail` in `dir` and must exit 0; a
 * `background` block starts each of its commands as a long-running process
 * (one terminal each), stopped by stop(); a `file <name>` YAML block is saved
 * as `<name>` in `dir` (the prose before it must name the file); an `expect`
 * block is output of the shell block before it, which is re-run until its
 * output contains every line of the expected one (with `exactOutput`: until
 * it is the expected one, line for line); a `fragment-of <path>`
 * block must be contained in that repository file; a `skip <reason>` block is
 * reported, not run. Any other block fails finish().
 */
export class Walkthrough {
  readonly blocks: readonly DocBlock[];
  private readonly reports = new Map<DocBlock, BlockReport>();
  private readonly processes: { command: string; server: ServerProcess }[] = [];
  private readonly reaper: ProcessReaper;
  private readonly scratch: string;
  private readonly env: NodeJS.ProcessEnv;
  private next = 0;

  constructor(private readonly options: WalkthroughOptions) {
    const name = relative(REPO, options.doc);
    this.blocks = parseDocBlocks(readFileSync(options.doc, 'utf8'), name);
    const all = this.blocks.map((b) => b.text).join('\n');
    for (const s of options.substitutions ?? []) {
      const hit = typeof s.from === 'string' ? all.includes(s.from) : new RegExp(s.from.source).test(all);
      if (!hit) throw new Error(`${name}: the substitution of ${String(s.from)} (${s.kind}) matches no block`);
    }
    mkdirSync(options.dir, { recursive: true });
    this.scratch = mkdtempSync(join(tmpdir(), 'mco-walkthrough-'));
    const bin = join(this.scratch, 'bin');
    mkdirSync(bin);
    for (const [command, target] of Object.entries(options.commands ?? {})) {
      if (typeof target === 'string') {
        symlinkSync(target, join(bin, command));
      } else {
        const quoted = target.map((arg) => `'${arg.replace(/'/g, `'\\''`)}'`).join(' ');
        writeFileSync(join(bin, command), `#!/bin/sh\nexec ${quoted} "$@"\n`);
        chmodSync(join(bin, command), 0o755);
      }
    }
    // The reaper's directory: removed, and every process killed, by stop() or when the test process dies.
    this.reaper = new ProcessReaper(this.scratch);
    this.env = { ...process.env, ...options.env, PATH: `${bin}:${process.env.PATH ?? ''}` };
  }

  private get name(): string {
    return relative(REPO, this.options.doc);
  }

  private where(block: DocBlock): string {
    return `${this.name}:${block.line}`;
  }

  /**
   * Runs the blocks not yet run, in order, through the first one whose text
   * contains `until` (all of them without it). Throws at the first block that
   * fails, naming its line.
   */
  async run(until?: string): Promise<void> {
    if (until !== undefined && !this.blocks.slice(this.next).some((b) => b.text.includes(until))) {
      throw new Error(`${this.name}: no block still to run contains "${until}"`);
    }
    while (this.next < this.blocks.length) {
      const block = this.blocks[this.next]!;
      const expected = this.blocks[this.next + 1];
      const paired = expected?.directive?.action === 'expect' && this.runnable(block);
      this.next += paired ? 2 : 1;
      if (paired) await this.runExpecting(block, expected);
      else await this.execute(block);
      if (until !== undefined && (block.text.includes(until) || (paired && expected.text.includes(until)))) return;
    }
  }

  private runnable(block: DocBlock): boolean {
    return SHELL.has(block.lang) && block.directive === undefined;
  }

  private async execute(block: DocBlock): Promise<void> {
    const d = block.directive;
    const text = substitute(block.text, this.options.substitutions ?? []);
    if (d === undefined) {
      if (!SHELL.has(block.lang)) {
        throw new Error(
          `${this.where(block)}: a \`${block.lang || 'plain'}\` block needs a walk-through marker (file, expect, fragment-of or skip)`,
        );
      }
      const result = await this.shell(text, this.options.timeoutMs ?? 120_000);
      if (result.code !== 0) throw new Error(this.failure(block, text, result));
      this.reports.set(block, { line: block.line, lang: block.lang, outcome: 'ran' });
      return;
    }
    switch (d.action) {
      case 'skip':
        this.reports.set(block, { line: block.line, lang: block.lang, outcome: 'skipped', detail: d.reason });
        return;
      case 'background': {
        if (!SHELL.has(block.lang)) throw new Error(`${this.where(block)}: a background block must be a shell block`);
        for (const command of commandsOf(text)) this.startBackground(command);
        const started = commandsOf(text).join('\n');
        this.reports.set(block, { line: block.line, lang: block.lang, outcome: 'background', detail: started });
        return;
      }
      case 'file': {
        if (!block.prose.includes(d.name)) {
          throw new Error(
            `${this.where(block)}: the text before the block does not tell the user to save it as ${d.name}`,
          );
        }
        if (/\.ya?ml$/.test(d.name)) this.parseYaml(block, text);
        writeFileSync(join(this.options.dir, d.name), `${text}\n`, { mode: 0o600 });
        this.reports.set(block, { line: block.line, lang: block.lang, outcome: 'file', detail: d.name });
        return;
      }
      case 'fragment-of': {
        const path = isAbsolute(d.path) ? d.path : join(this.options.root ?? REPO, d.path);
        const fragment = this.parseYaml(block, text);
        const whole = parseAllDocuments(readFileSync(path, 'utf8')).map((doc) => doc.toJS() as unknown);
        if (fragment.length !== 1 || !foundIn(whole, fragment[0])) {
          throw new Error(`${this.where(block)}: the block is not part of ${d.path}:\n${text}`);
        }
        this.reports.set(block, { line: block.line, lang: block.lang, outcome: 'fragment', detail: d.path });
        return;
      }
      case 'expect':
        throw new Error(`${this.where(block)}: an expected output must follow a shell block that runs`);
    }
  }

  /** Re-runs a query block until its output holds every line of the expected block. */
  private async runExpecting(block: DocBlock, expected: DocBlock): Promise<void> {
    const text = substitute(block.text, this.options.substitutions ?? []);
    const lines = (output: string) => output.split('\n').map(normalizeOutputLine).filter(Boolean);
    const want = lines(substitute(expected.text, this.options.substitutions ?? []));
    const deadline = Date.now() + (this.options.expectTimeoutMs ?? 240_000);
    for (;;) {
      const result = await this.shell(text, this.options.timeoutMs ?? 120_000);
      const produced = lines(result.stdout);
      const got = new Set(produced);
      const missing = want.filter((line) => !got.has(line));
      const same = !this.options.exactOutput || JSON.stringify(produced) === JSON.stringify(want);
      if (result.code === 0 && missing.length === 0 && same) break;
      if (Date.now() > deadline) {
        const what = missing.length > 0 ? `never showed ${JSON.stringify(missing)}` : 'never was the sample exactly';
        throw new Error(
          `${this.where(block)}: the output ${what} (the block at line ${expected.line}); it was:\n${produced.join('\n')}\n${this.failure(block, text, result)}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    this.reports.set(block, { line: block.line, lang: block.lang, outcome: 'ran' });
    this.reports.set(expected, { line: expected.line, lang: expected.lang, outcome: 'expected' });
  }

  private parseYaml(block: DocBlock, text: string): unknown[] {
    const docs = parseAllDocuments(text);
    for (const doc of docs) {
      if (doc.errors.length > 0)
        throw new Error(`${this.where(block)}: YAML does not parse: ${doc.errors[0]!.message}`);
    }
    return docs.map((doc) => doc.toJS() as unknown);
  }

  private shell(script: string, timeoutMs: number): Promise<Result> {
    return new Promise((resolve) => {
      const child = spawn('bash', ['-eo', 'pipefail', '-c', script], {
        cwd: this.options.dir,
        env: this.env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
      child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
      const timer = setTimeout(() => {
        stderr += `\n(killed after ${timeoutMs} ms)`;
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }, timeoutMs);
      child.on('error', (error) => {
        clearTimeout(timer);
        resolve({ code: null, stdout, stderr: `${stderr}${error.message}` });
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  private failure(block: DocBlock, text: string, result: Result): string {
    const tail = (s: string) => s.trimEnd().split('\n').slice(-20).join('\n');
    return `${this.where(block)}: the block exited ${result.code}:\n${text}\n--- stdout\n${tail(result.stdout)}\n--- stderr\n${tail(result.stderr)}${this.processes.length ? `\n${this.logs()}` : ''}`;
  }

  /** Every block with what was done with it; throws, listing them, when any block was left unrun. */
  finish(): BlockReport[] {
    const left = this.blocks.filter((b) => !this.reports.has(b));
    if (left.length > 0) {
      throw new Error(
        `${this.name}: ${left.length} block(s) left unrun: ${left.map((b) => `line ${b.line} (${b.lang || 'plain'})`).join(', ')}`,
      );
    }
    return this.blocks.map((b) => this.reports.get(b)!);
  }

  private startBackground(command: string): ServerProcess {
    const log = join(this.scratch, `${this.processes.length}-${basename(command.split(/\s+/)[0]!)}.log`);
    const server = startServer('bash', ['-c', command], log, this.backgroundEnv(), this.options.dir);
    this.reaper.track(server.child.pid);
    this.processes.push({ command, server });
    return server;
  }

  private backgroundEnv(): Record<string, string> {
    return Object.fromEntries(Object.entries(this.env).filter((e): e is [string, string] => e[1] !== undefined));
  }

  /** The background processes started so far (the latest last), by the command that started them. */
  background(): readonly { command: string; server: ServerProcess }[] {
    return this.processes;
  }

  /** The latest background process whose command contains `match`. */
  process(match: string): { command: string; server: ServerProcess } {
    const found = this.processes.findLast((p) => p.command.includes(match));
    if (!found) throw new Error(`${this.name}: no background command contains "${match}"`);
    return found;
  }

  /** Stops the background process whose command contains `match` (graceMs 0: SIGKILL, a crash). */
  async stopProcess(match: string, graceMs = 10_000): Promise<void> {
    const { server } = this.process(match);
    await stopServer(server, graceMs);
    this.reaper.untrack(server.child.pid);
  }

  /**
   * Starts a stopped background command again, as the user would in its
   * terminal: the doc's command (the first one started that contains
   * `match`), or `change` of it for a fault test (e.g. another kubeconfig).
   */
  restartProcess(match: string, change: (command: string) => string = (c) => c): ServerProcess {
    const latest = this.process(match);
    if (!latest.server.hasExited()) throw new Error(`${this.name}: "${latest.command}" is still running`);
    return this.startBackground(change(this.processes.find((p) => p.command.includes(match))!.command));
  }

  /** The last lines of every background process's log, for failure messages. */
  logs(lines = 15): string {
    return this.processes
      .map(
        ({ command, server }) =>
          `--- ${command}${server.hasExited() ? ' (exited)' : ''}\n${tailOf(server.logFile, lines)}`,
      )
      .join('\n');
  }

  /** Stops the background processes (SIGTERM, then SIGKILL after `graceMs`) and removes the scratch directory. */
  async stop(graceMs = 10_000): Promise<void> {
    await Promise.all(this.processes.map(({ server }) => stopServer(server, graceMs)));
    this.reaper.dispose();
  }
}
