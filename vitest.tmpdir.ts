import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

// Every test run writes its scratch files (kubeconfigs with tokens, test CAs' keys, server data
// directories) under one directory of its own, removed when the run ends: a run leaves nothing in
// the machine's temporary directory. Workers start after this and inherit TMPDIR, so `os.tmpdir()`
// and the processes the tests start use it.
export default function setup(): () => Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'mco-run-'));
  const previous = { TMPDIR: process.env.TMPDIR, TMP: process.env.TMP, TEMP: process.env.TEMP };
  process.env.TMPDIR = process.env.TMP = process.env.TEMP = dir;
  return async () => {
    for (const [name, value] of Object.entries(previous)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    // A worker that died without its exit hook left its servers to testkit's watchdog, which polls
    // every second and needs their pid list: let it act before the list goes.
    if (pidListsLeft(dir)) await sleep(2_500);
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  };
}

function pidListsLeft(dir: string): boolean {
  return readdirSync(dir).some((entry) => {
    try {
      return readFileSync(join(dir, entry, 'pids'), 'utf8').trim() !== '';
    } catch {
      return false;
    }
  });
}
