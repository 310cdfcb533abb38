// No file in the repository cites a document the repository does not contain:
// Markdown links, file names ending in .md anywhere (comments, JSDoc, strings:
// "see api.md", "docs/placement-rules.md §3"), `@see <path>` tags, and links to
// the project's own repository on GitHub. A user who reads a published
// package's JSDoc or a doc page must find what it points to.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const TEXT = /\.(md|ts|mts|cts|js|mjs|cjs|sh|ya?ml|json|go|tpl|txt)$|(^|\/)(Dockerfile|Makefile)$/;
/** The project's own repository: a link into it names a path that must exist here. */
const OWN_REPO = /https:\/\/github\.com\/mco-project\/mco\/(?:blob|tree)\/[^/\s)]+\/([^\s)#'"`>]+)/g;

const SELF = relative(REPO, fileURLToPath(import.meta.url));

function repositoryFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
    cwd: REPO,
    encoding: 'utf8',
  });
  return out
    .split('\n')
    .filter((f) => f && TEXT.test(f) && !f.endsWith('package-lock.json') && existsSync(join(REPO, f)));
}

/** Where a cited path may live: beside the citing file, at the repository root, in docs/, in its package. */
function resolves(file: string, target: string): boolean {
  const dir = dirname(join(REPO, file));
  const packageRoot = file.match(/^((?:packages|apps)\/[^/]+)\//)?.[1];
  const bases = [dir, REPO, join(REPO, 'docs'), ...(packageRoot ? [join(REPO, packageRoot)] : [])];
  // A package's CHANGELOG.md is written by the release (changesets), never kept in the repository.
  if (target.endsWith('CHANGELOG.md')) return true;
  return bases.some((base) => existsSync(resolve(base, target)));
}

interface Citation {
  readonly file: string;
  readonly line: number;
  readonly target: string;
}

export function citationsIn(file: string, text: string): Citation[] {
  const out: Citation[] = [];
  const lines = text.split('\n');
  const add = (line: number, target: string) => {
    // A placeholder (`docs/…`, `<name>.md`) names no file.
    if (/[…<>*]/.test(target)) return;
    if (!out.some((c) => c.line === line + 1 && c.target === target)) out.push({ file, line: line + 1, target });
  };
  lines.forEach((line, i) => {
    for (const m of line.matchAll(OWN_REPO)) add(i, m[1]!);
    const withoutUrls = line.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s)>'"`]+/gi, ' ');
    if (file.endsWith('.md')) {
      for (const m of withoutUrls.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = m[1]!.replace(/[#?].*$/, '');
        if (target && !/^(mailto|tel):/i.test(target)) add(i, decodeURIComponent(target));
      }
    }
    for (const m of withoutUrls.matchAll(/@see\s+([\w./-]+\.[a-z]+)\b/g)) add(i, m[1]!);
    for (const m of withoutUrls.matchAll(/(?<![\w@/.-])((?:\.{1,2}\/)*[\w.-]+(?:\/[\w.-]+)*\.md)\b/g)) add(i, m[1]!);
  });
  return out;
}

describe('citations of documents', () => {
  it('every document a file cites is in the repository', () => {
    const broken = repositoryFiles().flatMap((file) => {
      // This file's own examples below cite made-up names on purpose.
      if (file === SELF || statSync(join(REPO, file)).size > 2_000_000) return [];
      return citationsIn(file, readFileSync(join(REPO, file), 'utf8'))
        .filter((c) => !resolves(c.file, c.target))
        .map((c) => `${c.file}:${c.line}: ${c.target}`);
    });
    expect(broken).toEqual([]);
  });

  // Users cannot look up the project's internal issue numbers: what users read
  // (docs, READMEs, examples, changesets, which become CHANGELOG entries) and
  // test file names name things by what they are.
  it('no internal issue number in what users read, nor in a test file name', () => {
    const read = /^(docs\/|examples\/|templates\/|\.changeset\/)|(^|\/)README\.md$/;
    const numbered = repositoryFiles().flatMap((file) => {
      if (/\.test\.ts$/.test(file) && /(^|[-_.])(issue-?)?\d{2,3}\.test\.ts$/.test(file)) return [`${file}: name`];
      if (!read.test(file) || !file.endsWith('.md')) return [];
      return readFileSync(join(REPO, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (/\bissues? #?\d+\b/i.test(line) ? [`${file}:${i + 1}: ${line.slice(0, 120)}`] : []));
    });
    expect(numbered).toEqual([]);
  });

  it.each([
    [
      'a Markdown link with an anchor',
      'docs/x.md',
      'See [the rules](placement-rules.md#3-cluster-states).',
      ['placement-rules.md'],
    ],
    ['a file name in a comment', 'packages/core/src/x.ts', ' * (semantics.md section 3)', ['semantics.md']],
    [
      'a path and a @see tag',
      'packages/a/src/x.ts',
      ' * @see ../../docs/api.md and @see src/crds.ts',
      ['../../docs/api.md', 'src/crds.ts'],
    ],
    [
      'a link into the project repository, not other URLs',
      'README.md',
      'https://github.com/mco-project/mco/blob/main/docs/flux.md and https://git.k8s.io/x/api-conventions.md',
      ['docs/flux.md'],
    ],
  ])('finds %s', (_name, file, text, targets) => {
    expect(citationsIn(file, text).map((c) => c.target)).toEqual(targets);
  });

  it('resolves beside the file, from the repository root, from docs/ and from the package', () => {
    expect(
      [
        ['docs/api.md', 'operations.md'],
        ['packages/testkit/src/crds.ts', 'docs/testing.md'],
        ['packages/testkit/src/crds.ts', 'api.md'],
        ['packages/testkit/src/crds.ts', 'test/citations.test.ts'],
        ['packages/testkit/src/crds.ts', 'nowhere.md'],
      ].map(([file, target]) => resolves(file!, target!)),
    ).toEqual([true, true, true, true, false]);
  });
});
