import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root; the same relative path from `src/` and `dist/`. */
const REPO = fileURLToPath(new URL('../../../', import.meta.url));

/** How to prepare the tools, in one line, for skip messages and errors. */
export const PREPARE_HINT =
  'run `npm test` (it prepares them first) or `node scripts/prepare-tools.mjs` (builds from the Go module proxy, once)';

/** Where scripts/prepare-tools.mjs records the prepared tools' paths. */
export function toolsManifestPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.MCO_TOOLS_MANIFEST ?? join(REPO, 'node_modules', '.cache', 'mco-tools.json');
}

function fromManifest(name: string, env: NodeJS.ProcessEnv): string | undefined {
  try {
    const manifest = JSON.parse(readFileSync(toolsManifestPath(env), 'utf8')) as Record<string, unknown>;
    const path = manifest[name];
    return typeof path === 'string' ? path : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The path `tools/<name>/build.sh` printed when the tools were prepared
 * (an executable or a directory), or undefined when it was not prepared or is
 * gone. Never builds: tests only use what was prepared before they started.
 */
export function preparedTool(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const path = fromManifest(name, env);
  return path !== undefined && existsSync(path) ? path : undefined;
}

/** The prepared tool's path, or an error naming it and how to prepare it. */
export function requireTool(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const path = preparedTool(name, env);
  if (path === undefined) throw new Error(`the test tool "${name}" is not prepared: ${PREPARE_HINT}`);
  return path;
}
