// Provenance cannot be produced on this machine (it needs the CI provider's
// OIDC token), so the publish workflow is checked as written: every
// `npm publish` in it has --provenance, with the permission that needs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { REPO } from './workspaces.js';

interface Workflow {
  permissions?: Record<string, string>;
  jobs: Record<string, { permissions?: Record<string, string>; steps: { run?: string }[] }>;
}

const workflow = parse(readFileSync(join(REPO, '.github', 'workflows', 'release.yml'), 'utf8')) as Workflow;
const runs = Object.values(workflow.jobs).flatMap((job) => job.steps.flatMap((step) => (step.run ? [step.run] : [])));
const publishes = runs.flatMap((run) => run.split('\n')).filter((line) => /\bnpm publish\b/.test(line));

describe('the publish workflow (.github/workflows/release.yml)', () => {
  it('builds the artefacts with the one release command', () => {
    expect(runs.some((run) => /^npm run release\b/.test(run.trim()))).toBe(true);
  });

  it('publishes with npm provenance, and may request the OIDC token it needs', () => {
    expect(publishes.length).toBeGreaterThan(0);
    for (const line of publishes) expect(line, line).toContain('--provenance');
    expect(workflow.permissions?.['id-token']).toBe('write');
  });
});
