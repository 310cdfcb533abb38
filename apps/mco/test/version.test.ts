import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { main } from '../src/main.js';

it('mco --version prints the version of the installed package, exit 0', async () => {
  let stdout = '';
  const code = await main(['--version'], { stdout: (t) => void (stdout += t), stderr: () => undefined });
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  expect({ code, stdout }).toEqual({ code: 0, stdout: `${version}\n` });
});
