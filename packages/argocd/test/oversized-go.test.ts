import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { preparedTool } from '@mco/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFileTokenVerifier,
  createPluginServer,
  createStaticPlacementView,
  PLUGIN_PATH,
  type PluginServer,
} from '../src/index.js';

const TOKEN = 'oversized-token';
const REQUESTS = 50;
const SIZES = [2 * 1024 * 1024, 8 * 1024 * 1024];

// tools/go-helpers/oversizedpost: Go's net/http client (Argo CD's), built before the tests by scripts/prepare-tools.mjs.
const goHelpers = preparedTool('go-helpers');
const skip = !goHelpers && process.env.CI !== 'true'; // under CI a missing helper fails
if (skip) console.warn('[argocd 413] skipping the Go client test: go-helpers not prepared (run npm test)');

describe.skipIf(skip)("over-limit requests from Go's net/http client", () => {
  let dir: string;
  let plugin: PluginServer;
  let url: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mco-413-'));
    writeFileSync(join(dir, 'token'), TOKEN);
    plugin = createPluginServer({
      view: createStaticPlacementView({ placements: [], clusterProfiles: [] }),
      token: createFileTokenVerifier(join(dir, 'token')),
    });
    const address = await plugin.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${address.port}${PLUGIN_PATH}`;
  });

  afterAll(async () => {
    await plugin?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(`reads the 413 every time: ${REQUESTS} requests of 2 MiB and of 8 MiB, never a connection reset`, async () => {
    const { stdout } = await promisify(execFile)(
      join(goHelpers ?? '', 'oversizedpost'),
      ['-url', url, '-token', TOKEN, '-sizes', SIZES.join(','), '-count', String(REQUESTS)],
      { timeout: 240_000, maxBuffer: 1024 * 1024 },
    );
    // What the Go client saw per body size: status code (or error) -> how often.
    expect(JSON.parse(stdout)).toEqual(Object.fromEntries(SIZES.map((size) => [String(size), { 413: REQUESTS }])));
  }, 300_000);
});
