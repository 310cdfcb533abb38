// The publish workflow cannot run here (it needs the CI provider's OIDC token
// for provenance, and registries to push to), so it is checked as written:
// every `npm publish` has --provenance, with the permission that needs, and
// every artefact it pushes is one the release command writes (release.json of
// the prepared release), under the name the chart's defaults pull.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { REPO } from './workspaces.js';

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, string | boolean>;
}
interface Workflow {
  permissions?: Record<string, string>;
  jobs: Record<string, { permissions?: Record<string, string>; steps: Step[] }>;
}

const workflow = parse(readFileSync(join(REPO, '.github', 'workflows', 'release.yml'), 'utf8')) as Workflow;
const steps = Object.values(workflow.jobs).flatMap((job) => job.steps);
const runs = steps.flatMap((step) => (step.run ? [step.run] : []));
const lines = runs.flatMap((run) => run.split('\n').map((line) => line.trim()));
const publishes = lines.filter((line) => /\bnpm publish\b/.test(line));
const VERSION = '${{ steps.release.outputs.version }}';

const RELEASE = process.env.MCO_RELEASE_DIR ?? join(REPO, 'node_modules', '.cache', 'mco-release');
const inCi = process.env.CI === 'true' || process.env.CI === '1';
const released = existsSync(join(RELEASE, 'release.json'));

describe('the publish workflow (.github/workflows/release.yml)', () => {
  it('builds the artefacts with the one release command, into release/', () => {
    expect(lines).toContain('npm run release -- --out release');
  });

  it('publishes with npm provenance, and may request the OIDC token it needs', () => {
    expect(publishes.length).toBeGreaterThan(0);
    for (const line of publishes) expect(line, line).toContain('--provenance');
    expect(workflow.permissions?.['id-token']).toBe('write');
  });

  describe.skipIf(!released && !inCi)("against the release command's output", () => {
    const release = () =>
      JSON.parse(readFileSync(join(RELEASE, 'release.json'), 'utf8')) as {
        version: string;
        packages: { tarball: string }[];
        chart: string;
        image: string;
        versionCommit: string;
      };
    const values = parse(readFileSync(join(REPO, 'apps', 'mco', 'chart', 'values.yaml'), 'utf8')) as {
      image: { repository: string; tag: string };
    };
    /** A release.json path with the version replaced by the workflow's expression. */
    const inWorkflow = (path: string) => `release/${path.replaceAll(release().version, VERSION)}`;

    it('takes the version it tags with from release.json', () => {
      expect(lines).toContain(
        'echo "version=$(node -p "require(\'./release/release.json\').version")" >> "$GITHUB_OUTPUT"',
      );
    });

    it('publishes every tarball release.json lists, in its order', () => {
      expect(
        lines.some((l) => l.includes("require('./release/release.json').packages.map((p) => 'release/' + p.tarball)")),
      ).toBe(true);
      for (const p of release().packages) expect(existsSync(join(RELEASE, p.tarball)), p.tarball).toBe(true);
    });

    it("builds and pushes the image from the release's build context, under the name the chart's defaults pull", () => {
      const image = steps.find((s) => s.uses?.startsWith('docker/build-push-action@'));
      expect(image?.with).toEqual({
        context: `release/${release().image}`,
        push: true,
        tags: `${values.image.repository}:${VERSION}`,
      });
      expect(values.image.tag).toBe(''); // the chart's appVersion, which the release sets to the version
      expect(existsSync(join(RELEASE, release().image, 'Dockerfile'))).toBe(true);
      expect(workflow.permissions?.packages).toBe('write');
    });

    it('pushes the packaged chart release.json names', () => {
      expect(lines).toContain(`helm push "${inWorkflow(release().chart)}" oci://ghcr.io/mco-project/charts`);
      expect(existsSync(join(RELEASE, release().chart))).toBe(true);
    });

    it('pushes the version commit the release wrote, with its tag', () => {
      expect(lines).toContain(`git am ${inWorkflow(release().versionCommit)}`);
      expect(lines).toContain(`git push origin "HEAD:\${{ github.ref_name }}" "v${VERSION}"`);
      expect(workflow.permissions?.contents).toBe('write');
    });
  });
});
