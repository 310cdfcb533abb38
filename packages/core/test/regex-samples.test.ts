import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sharedCrdsDir } from '@mco/testkit';
import { describe, expect, it } from 'vitest';
import { compileRe2 } from '@mco/core';

// Every cluster-name-regex a user may copy stays accepted under the cost
// limits: the ones in examples/ (Google MCO's samples are
// examples/first-run/placements.yaml), in the YAML blocks of docs/ and in
// ../shared/crds when present.
const REPO = fileURLToPath(new URL('../../..', import.meta.url));

function files(dir: string, ends: readonly string[]): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && ends.some((end) => e.name.endsWith(end)) && !e.parentPath.includes('node_modules'))
    .map((e) => join(e.parentPath, e.name));
}

/** `regex:` values of YAML or JSON text: plain, 'single-quoted' or "double-quoted". */
function regexesIn(text: string): string[] {
  return [
    ...text.matchAll(/["']?\bregex["']?:[ \t]*(?:'((?:[^']|'')*)'|"((?:[^"\\]|\\.)*)"|([^\s,}'"#][^\s,}#]*))/g),
  ].map(([, single, double, plain]) =>
    single !== undefined ? single.replaceAll("''", "'") : double !== undefined ? JSON.parse(`"${double}"`) : plain!,
  );
}

const yamlBlocks = (markdown: string) => [...markdown.matchAll(/```ya?ml\n([\s\S]*?)```/g)].map((m) => m[1]!);

function collect(): { where: string; regex: string }[] {
  const shared = sharedCrdsDir();
  const sources = [
    ...files(join(REPO, 'examples'), ['.yaml', '.yml', '.json']).map((f) => [f, readFileSync(f, 'utf8')] as const),
    ...files(join(REPO, 'docs'), ['.md']).flatMap((f) =>
      yamlBlocks(readFileSync(f, 'utf8')).map((block) => [f, block] as const),
    ),
    ...(shared ? files(shared, ['.yaml']).map((f) => [f, readFileSync(f, 'utf8')] as const) : []),
  ];
  return sources.flatMap(([file, text]) => regexesIn(text).map((regex) => ({ where: relative(REPO, file), regex })));
}

describe('the regexes of examples, docs and MCO samples', () => {
  const found = collect();

  it('are found', () => {
    expect(found).toEqual(
      expect.arrayContaining([
        { where: 'examples/first-run/placements.yaml', regex: '^fleet-cluster-inventory/mco-cluster-' },
        { where: 'examples/first-run/placements.yaml', regex: '^fleet-cluster-inventory/mco-cluster-(asia|eu)$' },
        { where: 'examples/placements/v0.1-rules.yaml', regex: '^fleet/us-[a-z]+[0-9]$' },
        { where: 'docs/mco-compatibility.md', regex: 'fleet-ns/us-.*' },
      ]),
    );
  });

  it.each(found.map((f) => [`${f.where}: /${f.regex}/`, f.regex] as const))('accepts %s', (_name, regex) => {
    const compiled = compileRe2(regex);
    expect(compiled.ok ? 'accepted' : compiled.error).toBe('accepted');
  });
});
