import { chmodSync, mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A temp folder with small real credential plugins (shell scripts) for tests. */
export function pluginDir() {
  const dir = mkdtempSync(join(tmpdir(), 'mco-exec-'));
  return {
    dir,
    /** Writes an executable script; `body` is POSIX sh. */
    script(name: string, body: string): string {
      const path = join(dir, name);
      writeFileSync(path, `#!/bin/sh\n${body}\n`);
      chmodSync(path, 0o755);
      return path;
    },
    /** How often a script that appends to `calls` ran. */
    calls(file = 'calls'): number {
      const path = join(dir, file);
      return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).length : 0;
    },
    read(file: string): string {
      return readFileSync(join(dir, file), 'utf8');
    },
  };
}

/** A script that records KUBERNETES_EXEC_INFO and its calls, then prints an ExecCredential. */
export function credentialScript(
  dir: ReturnType<typeof pluginDir>,
  status: Record<string, unknown>,
  apiVersion = 'client.authentication.k8s.io/v1',
  delaySeconds = 0,
): string {
  const json = JSON.stringify({ apiVersion, kind: 'ExecCredential', status });
  return dir.script(
    'plugin.sh',
    [
      `echo call >> '${dir.dir}/calls'`,
      `printf '%s' "$KUBERNETES_EXEC_INFO" > '${dir.dir}/exec-info'`,
      `printf '%s' "$EXTRA" > '${dir.dir}/extra'`,
      delaySeconds ? `sleep ${delaySeconds}` : '',
      `cat <<'JSON'\n${json}\nJSON`,
    ].join('\n'),
  );
}
