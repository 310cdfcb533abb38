import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { builtMco } from './built.js';

// `mco controller` must never load @kubernetes/client-node: importing it costs
// about 65 MiB of RSS (docs/performance.md). The built bundle is run
// with a module resolve hook that records every module it loads; the
// `clusters` command, which still uses client-node, shows that the hook sees it.
const BIN = builtMco();

describe('the modules each mco command loads', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mco-modules-'));
  const register = join(dir, 'register.mjs');

  beforeAll(() => {
    writeFileSync(
      join(dir, 'hooks.mjs'),
      [
        "import { appendFileSync } from 'node:fs';",
        'export async function resolve(specifier, context, next) {',
        '  const resolved = await next(specifier, context);',
        '  appendFileSync(process.env.MCO_MODULES_LOG, `${resolved.url}\\n`);',
        '  return resolved;',
        '}',
      ].join('\n'),
    );
    writeFileSync(register, "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n");
  });

  /** The packages (`node_modules/<name>`) a command loads before it prints its help. */
  const packagesLoadedBy = (command: string): string[] => {
    const log = join(dir, `${command}.log`);
    const run = spawnSync(process.execPath, ['--import', register, BIN, command, '--help'], {
      encoding: 'utf8',
      env: { ...process.env, MCO_MODULES_LOG: log },
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const urls = existsSync(log) ? readFileSync(log, 'utf8').split('\n') : [];
    const names = urls.flatMap((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1] ?? []);
    return [...new Set(names)].sort();
  };

  it('`mco controller` loads no @kubernetes/client-node; `mco clusters` (still on client-node) does', () => {
    const controller = packagesLoadedBy('controller');
    const clusters = packagesLoadedBy('clusters');
    expect({
      controller: controller.includes('@kubernetes/client-node'),
      clusters: clusters.includes('@kubernetes/client-node'),
      controllerLoadsSomething: controller.includes('prom-client'),
    }).toEqual({ controller: false, clusters: true, controllerLoadsSomething: true });
  });

  // The adapters get the hub connection the command loaded: no client-node either.
  it('`mco argocd-plugin`, `argocd-sync`, `flux` and `configsync` load no @kubernetes/client-node', () => {
    const adapters = ['argocd-plugin', 'argocd-sync', 'flux', 'configsync'];
    expect(
      Object.fromEntries(adapters.map((c) => [c, packagesLoadedBy(c).includes('@kubernetes/client-node')])),
    ).toEqual(Object.fromEntries(adapters.map((c) => [c, false])));
  });
});
