import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Reporter, SerializedError, TestModule } from 'vitest/node';

// Vitest's JSON report gives a file whose beforeAll/afterAll threw an empty
// message and its tests as skipped, so a CI log's closing summary could name
// the file but not why. This reporter writes those errors (and errors outside
// any test) beside the JSON report, as `<report>-errors.json`: file → messages.
export default class HookErrors implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandled: ReadonlyArray<SerializedError>): void {
    const out: Record<string, string[]> = {};
    // A stack starts with its message; a message that is not in it (a timeout's logs) goes first.
    const text = (e: SerializedError) => (e.stack?.includes(e.message) ? e.stack : `${e.message}\n${e.stack ?? ''}`);
    for (const module of modules) {
      const errors = [...module.errors(), ...[...module.children.allSuites()].flatMap((s) => s.errors())];
      if (errors.length) out[module.moduleId] = errors.map(text);
    }
    if (unhandled.length) out['(outside any file)'] = unhandled.map(text);
    const file = resolve(process.env.MCO_VITEST_REPORT ?? 'reports/vitest.json').replace(/\.json$/, '-errors.json');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(out, null, 2));
  }
}
