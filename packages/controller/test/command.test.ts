import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../../apps/mco/src/main.js';
import { CONTROLLER_FLAGS, flagSyntax } from '../src/index.js';

// `mco controller` refuses bad configuration at start, naming what is wrong,
// before it talks to any cluster.
async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

const dir = mkdtempSync(join(tmpdir(), 'mco-controller-cli-'));
const kubeconfig = join(dir, 'kubeconfig.yaml');
writeFileSync(
  kubeconfig,
  `apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: 'https://127.0.0.1:1'}}]
users: [{name: hub-user, user: {token: not-used}}]
contexts: [{name: hub, context: {cluster: hub, user: hub-user}}]
current-context: hub
`,
);
function sourcesFile(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

describe('mco controller', () => {
  it('documents every flag and its environment variable in --help', async () => {
    const { code, stdout } = await run(['controller', '--help']);
    const missing = CONTROLLER_FLAGS.filter((f) => !stdout.includes(flagSyntax(f)) || !stdout.includes(`env ${f.env}`));
    expect({ code, missing, plugins: stdout.includes('one of: kubernetes, prometheus') }).toEqual({
      code: 0,
      missing: [],
      plugins: true,
    });
  });

  it.each([
    { name: 'a bad flag value', argv: ['--workers', '0'], error: /^mco controller: --workers \(MCO_WORKERS\): .*1/ },
    { name: 'an unknown flag', argv: ['--wokers', '2'], error: /^mco controller: .*wokers/ },
    {
      name: 'inconsistent leader-election timings',
      argv: ['--lease-duration', '5s', '--renew-deadline', '5s'],
      error: /--retry-period < --renew-deadline < --lease-duration/,
    },
    {
      name: 'an unknown signal-source plugin',
      argv: [
        '--signal-sources',
        sourcesFile('unknown.yaml', 'sources: [{name: a, plugin: datadog, placementNamespaces: ["*"]}]'),
      ],
      error: /sources\[0\]\.plugin: unknown signal-source plugin "datadog" \(known: kubernetes, prometheus\)/,
    },
    {
      name: 'a plugin configuration the plugin rejects',
      argv: [
        '--signal-sources',
        sourcesFile(
          'bad-config.yaml',
          'sources: [{name: p, plugin: prometheus, config: {url: 42}, placementNamespaces: ["*"]}]',
        ),
      ],
      error: /sources\[0\]\.config\.url: /,
    },
    {
      name: 'a source name used twice',
      argv: [
        '--signal-sources',
        sourcesFile(
          'twice.yaml',
          'sources: [{name: p, plugin: prometheus, config: {url: "http://a:9090"}, placementNamespaces: [a]}, {name: p, plugin: prometheus, config: {url: "http://b:9090"}, placementNamespaces: [b]}]',
        ),
      ],
      error: /sources\[1\]\.name: "p" is used twice/,
    },
    {
      name: 'a source without placementNamespaces (it would serve every namespace)',
      argv: [
        '--signal-sources',
        sourcesFile('no-namespaces.yaml', 'sources: [{name: p, plugin: prometheus, config: {url: "http://a:9090"}}]'),
      ],
      error:
        /sources\[0\]\.placementNamespaces: required: the namespaces whose placements may use this source, or \['\*'\] for every namespace/,
    },
    {
      name: 'an empty placementNamespaces',
      argv: [
        '--signal-sources',
        sourcesFile('empty.yaml', 'sources: [{name: p, plugin: prometheus, placementNamespaces: []}]'),
      ],
      error: /sources\[0\]\.placementNamespaces: list at least one namespace, or \['\*'\] for every namespace/,
    },
    {
      name: "'*' beside a namespace",
      argv: [
        '--signal-sources',
        sourcesFile('star.yaml', 'sources: [{name: p, plugin: prometheus, placementNamespaces: ["*", team-a]}]'),
      ],
      error: /sources\[0\]\.placementNamespaces: '\*' \(every namespace\) stands alone/,
    },
    {
      name: 'a default source that is not listed',
      argv: ['--signal-sources', sourcesFile('default.yaml', 'defaultSource: nope\nsources: []')],
      error: /defaultSource "nope" is not among the sources/,
    },
  ])('exits 2 naming the problem for $name', async ({ argv, error }) => {
    const { code, stderr } = await run(['controller', '--kubeconfig', kubeconfig, ...argv]);
    expect({ code, stderr }).toEqual({ code: 2, stderr: expect.stringMatching(error) });
  });
});
