import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  commandsOf,
  containsFragment,
  normalizeOutputLine,
  parseDocBlocks,
  substitute,
  Walkthrough,
} from '../src/index.js';

const dirs: string[] = [];
const walks: Walkthrough[] = [];
afterEach(async () => {
  for (const walk of walks.splice(0)) await walk.stop(0);
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A doc in a fresh directory, and the directory its commands run in. */
function docOf(markdown: string): { doc: string; dir: string; root: string } {
  const root = mkdtempSync(join(tmpdir(), 'walkthrough-test-'));
  dirs.push(root);
  writeFileSync(join(root, 'guide.markdown'), markdown);
  return { doc: join(root, 'guide.markdown'), dir: join(root, 'work'), root };
}

function walkOf(markdown: string, options: Partial<ConstructorParameters<typeof Walkthrough>[0]> = {}) {
  const paths = docOf(markdown);
  const walk = new Walkthrough({ ...paths, timeoutMs: 20_000, expectTimeoutMs: 20_000, ...options });
  walks.push(walk);
  return { walk, ...paths };
}

const fence = '```';

describe('parseDocBlocks', () => {
  it('finds every fenced block in order, dedented, with its marker and the prose before it', () => {
    const blocks = parseDocBlocks(
      [
        '# Title',
        '',
        `${fence}sh`,
        'echo one',
        fence,
        '',
        '1. Save as `a.yaml`:',
        '',
        '   <!-- walkthrough: file a.yaml -->',
        '',
        `   ${fence}yaml`,
        '   kind: A',
        '   spec:',
        '     x: 1',
        `   ${fence}`,
        '',
        '<!-- walkthrough: skip sample log -->',
        '~~~',
        'log line',
        '~~~',
      ].join('\n'),
    );
    expect(blocks).toEqual([
      { line: 3, lang: 'sh', text: 'echo one', directive: undefined, prose: '# Title\n' },
      {
        line: 11,
        lang: 'yaml',
        text: 'kind: A\nspec:\n  x: 1',
        directive: { action: 'file', name: 'a.yaml' },
        prose: '\n1. Save as `a.yaml`:\n\n',
      },
      {
        line: 18,
        lang: '',
        text: 'log line',
        directive: { action: 'skip', reason: 'sample log' },
        prose: '',
      },
    ]);
  });

  it.each([
    ['<!-- walkthrough: skip -->', 'guide.markdown:2: "walkthrough: skip" needs a reason'],
    ['<!-- walkthrough: file -->', 'guide.markdown:2: "walkthrough: file" needs a file name'],
    ['<!-- walkthrough: run-later -->', 'guide.markdown:2: unknown walk-through marker "run-later"'],
  ])('refuses the marker %s', (marker, message) => {
    expect(() => parseDocBlocks(`${marker}\n${fence}sh\ntrue\n${fence}\n`, 'guide.markdown')).toThrow(message);
  });

  it('refuses a block that is never closed, naming its line', () => {
    expect(() => parseDocBlocks(`text\n${fence}sh\ntrue\n`, 'guide.markdown')).toThrow(
      'guide.markdown:2: code block never closed',
    );
  });
});

describe('helpers', () => {
  it('splits a shell text into commands, joining continued lines and dropping comments', () => {
    expect(commandsOf('# start\nmco a --x 1 \\\n  --y 2\n\nB=1 b\n')).toEqual(['mco a --x 1    --y 2', 'B=1 b']);
  });

  it('substitutes strings everywhere and regular expressions as given', () => {
    expect(
      substitute('http://127.0.0.1:4355 and 127.0.0.1:4355; token <t>', [
        { kind: 'port', from: '127.0.0.1:4355', to: '127.0.0.1:40001' },
        { kind: 'token', from: /<t>/g, to: 'abc' },
      ]),
    ).toBe('http://127.0.0.1:40001 and 127.0.0.1:40001; token abc');
  });

  it.each([
    [{ a: { b: [1, 2], c: 'x' } }, { a: { b: [2] } }, true],
    [{ a: { b: [1, 2], c: 'x' } }, { a: { c: 'y' } }, false],
    [{ a: [{ n: 1, m: 2 }] }, { a: [{ m: 2 }] }, true],
    [{ a: 1 }, { b: 1 }, false],
  ])('containsFragment(%j, %j) is %s', (whole, fragment, expected) => {
    expect(containsFragment(whole, fragment)).toBe(expected);
  });
});

describe('Walkthrough', () => {
  it('runs every kind of block in order and reports what it did with each', async () => {
    const { walk, dir } = walkOf(
      [
        'Save the settings as `settings.yaml`:',
        '<!-- walkthrough: file settings.yaml -->',
        `${fence}yaml`,
        'port: 4355',
        fence,
        'Start the server (leave it running):',
        '<!-- walkthrough: background -->',
        `${fence}sh`,
        'greet --port 4355 \\',
        '  --settings settings.yaml',
        fence,
        'Wait until it is up:',
        `${fence}sh`,
        'cat greeting 2>/dev/null || true',
        fence,
        '<!-- walkthrough: expect -->',
        `${fence}text`,
        'hello   on 4355',
        fence,
        'The file is part of the example:',
        '<!-- walkthrough: fragment-of example.yaml -->',
        `${fence}yaml`,
        'spec:',
        '  items: [b]',
        fence,
        '<!-- walkthrough: skip sample log lines -->',
        `${fence}text`,
        'INFO anything',
        fence,
        `${fence}bash`,
        'grep -q 4355 settings.yaml && echo done > finished',
        fence,
      ].join('\n'),
      {
        substitutions: [{ kind: 'port', from: '4355', to: '40123' }],
        // The "server": answers once it has read its settings, after a moment, then stays up.
        commands: {
          greet: ['sh', '-c', 'sleep 0.3; echo "hello on $2" > greeting; exec sleep 600', 'greet'],
        },
      },
    );
    writeFileSync(join(dir, '..', 'example.yaml'), 'kind: X\nspec:\n  items: [a, b]\n  other: 1\n');
    await walk.run();
    expect({
      report: walk.finish(),
      settings: readFileSync(join(dir, 'settings.yaml'), 'utf8'),
      finished: readFileSync(join(dir, 'finished'), 'utf8'),
      running: walk.background().map((p) => [p.command, p.server.hasExited()]),
    }).toEqual({
      report: [
        { line: 3, lang: 'yaml', outcome: 'file', detail: 'settings.yaml' },
        { line: 8, lang: 'sh', outcome: 'background', detail: 'greet --port 40123    --settings settings.yaml' },
        { line: 13, lang: 'sh', outcome: 'ran' },
        { line: 17, lang: 'text', outcome: 'expected' },
        { line: 22, lang: 'yaml', outcome: 'fragment', detail: 'example.yaml' },
        { line: 27, lang: 'text', outcome: 'skipped', detail: 'sample log lines' },
        { line: 30, lang: 'bash', outcome: 'ran' },
      ],
      settings: 'port: 40123\n',
      finished: 'done\n',
      running: [['greet --port 40123    --settings settings.yaml', false]],
    });
    // A fault test stops a process and starts it again, changed or as the doc wrote it.
    await walk.stopProcess('greet', 0);
    expect(() => walk.restartProcess('greet')).not.toThrow();
    expect(() => walk.restartProcess('greet')).toThrow('is still running');
    await walk.stopProcess('greet', 0);
    walk.restartProcess('greet', (command) => command.replace('--settings', '--other'));
    await walk.stopProcess('greet', 0);
    walk.restartProcess('greet');
    const command = 'greet --port 40123    --settings settings.yaml';
    expect(walk.background().map((p) => [p.command, p.server.hasExited()])).toEqual([
      [command, true],
      [command, true],
      ['greet --port 40123    --other settings.yaml', true],
      [command, false],
    ]);
  });

  it('runs up to the block containing a text, then the rest, and fails finish() for blocks left unrun', async () => {
    const { walk, dir } = walkOf(
      [
        `${fence}sh`,
        'echo 1 >> log',
        fence,
        `${fence}sh`,
        'echo 2 >> log',
        fence,
        `${fence}sh`,
        'echo 3 >> log',
        fence,
      ].join('\n'),
    );
    await walk.run('echo 2');
    expect(readFileSync(join(dir, 'log'), 'utf8')).toBe('1\n2\n');
    expect(() => walk.finish()).toThrow('guide.markdown: 1 block(s) left unrun: line 7 (sh)');
    await walk.run();
    expect(walk.finish().map((r) => r.outcome)).toEqual(['ran', 'ran', 'ran']);
  });

  it.each([
    ['a failing command', `${fence}sh\ntrue\nfalse\necho never\n${fence}`, 'guide.markdown:1: the block exited 1'],
    ['a failing pipeline', `${fence}sh\nfalse | cat\n${fence}`, 'guide.markdown:1: the block exited 1'],
    [
      'an unmarked YAML block',
      `x\n\n${fence}yaml\na: 1\n${fence}`,
      'guide.markdown:3: a `yaml` block needs a walk-through marker (file, expect, fragment-of or skip)',
    ],
    [
      'a file the prose does not name',
      `Save it:\n<!-- walkthrough: file b.yaml -->\n${fence}yaml\na: 1\n${fence}`,
      'guide.markdown:3: the text before the block does not tell the user to save it as b.yaml',
    ],
    [
      'a fragment missing from its file',
      `<!-- walkthrough: fragment-of guide.markdown -->\n${fence}yaml\na: 1\n${fence}`,
      'guide.markdown:2: the block is not part of guide.markdown',
    ],
    [
      'an expected output that never appears',
      `${fence}sh\necho no\n${fence}\n<!-- walkthrough: expect -->\n${fence}\nyes\n${fence}`,
      'guide.markdown:1: the output never showed ["yes"] (the block at line 5)',
    ],
  ])('fails on %s, naming the line', async (_, markdown, message) => {
    const { walk, root } = walkOf(markdown, { expectTimeoutMs: 1_000 });
    const error = await walk.run().then(
      () => undefined,
      (e: Error) => e.message,
    );
    expect(error?.replace(root, '')).toContain(message);
  });

  it('with exactOutput, an expected output must be the whole output, ages and timestamps aside', async () => {
    const sample = (shown: string) =>
      `${fence}sh\nprintf 'one 5s\\ntwo 2026-01-01T00:00:00Z\\n'\n${fence}\n<!-- walkthrough: expect -->\n${fence}\n${shown}\n${fence}`;
    const run = (markdown: string) =>
      walkOf(markdown, { expectTimeoutMs: 1_000, exactOutput: true })
        .walk.run()
        .then(
          () => 'matched',
          (e: Error) => e.message,
        );
    expect({
      whole: await run(sample('one 3m2s\ntwo 2026-11-29T06:00:00.123Z')),
      part: /guide\.markdown:1: .*/.exec((await run(sample('one 5s'))).split('\n')[0]!)?.[0],
      normalized: normalizeOutputLine('  web   True   4h10m  '),
    }).toEqual({
      whole: 'matched',
      part: 'guide.markdown:1: the output never was the sample exactly (the block at line 5); it was:',
      normalized: 'web True <age>',
    });
  });

  it('refuses a substitution that matches no block', () => {
    const paths = docOf(`${fence}sh\necho 8080\n${fence}\n`);
    expect(() => new Walkthrough({ ...paths, substitutions: [{ kind: 'port', from: '9090', to: '1' }] })).toThrow(
      'guide.markdown: the substitution of 9090 (port) matches no block',
    );
  });
});
