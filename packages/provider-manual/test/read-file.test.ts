import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { McoError } from '@mco/runtime';
import { describe, expect, it } from 'vitest';
import { readClustersFile } from '../src/index.js';

describe('readClustersFile reads only a stable file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mco-read-'));
  const full = 'clusters:\n  - name: a\n  - name: b\n  - name: c\n';

  it('a file caught mid-write is read again once the writer has finished', async () => {
    const path = join(dir, 'growing.yaml');
    writeFileSync(path, full.slice(0, 14)); // "clusters:\n  - " parses, as one null entry: a truncated write
    let pauses = 0;
    const value = await readClustersFile(path, {
      settle: async () => {
        // The writer finishes while the first read settles.
        if (pauses++ === 0) appendFileSync(path, full.slice(14));
      },
    });
    expect({ value, pauses }).toEqual({
      value: { clusters: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] },
      pauses: 2,
    });
  });

  it('a file that never stops changing is a retryable error naming it, never a partial read', async () => {
    const path = join(dir, 'busy.yaml');
    writeFileSync(path, 'clusters: []\n');
    const error = await readClustersFile(path, {
      attempts: 3,
      settle: async () => appendFileSync(path, '# still writing\n'),
    }).catch((e: unknown) => e);
    expect(error instanceof McoError && [error.code, error.retryable, error.message]).toEqual([
      'Unavailable',
      true,
      `${path} kept changing while being read (3 attempts)`,
    ]);
  });
});
