import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubernetesObject } from '@kubernetes/client-node';
import { PlacementSchema, type ClusterProfile, type Placement } from '@mco/core';
import { aClusterProfile } from '@mco/core/testing';
import {
  describeWithControlPlane,
  loadYamlObjects,
  preparedTool,
  thirdPartyCrd,
  startControlPlane,
  type ControlPlane,
} from '@mco/testkit';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFileTokenVerifier,
  createPluginServer,
  createStaticPlacementView,
  placementsOf,
  type PluginParameters,
  type PluginServer,
} from '../src/index.js';
import { GoClient, argoBody } from './go-client.js';
import { renderTemplate } from './go-template.js';

const examplesDir = fileURLToPath(new URL('../../../examples/argocd/', import.meta.url));
const T = '2026-01-01T00:00:00Z';

interface ApplicationSet extends KubernetesObject {
  spec: {
    goTemplate?: boolean;
    generators: unknown[];
    template: Record<string, unknown>;
    templatePatch?: string;
  };
}

const samples = ['hello-world', 'gemma-vllm'].map((name) => {
  const [appSet] = loadYamlObjects(join(examplesDir, name, 'applicationset.yaml')) as ApplicationSet[];
  const [placement] = loadYamlObjects(join(examplesDir, name, 'placement.yaml')) as unknown as Placement[];
  return { name, appSet: appSet!, placement: placement! };
});

// tools/go-helpers/gotemplate, built before the tests by scripts/prepare-tools.mjs.
const goHelpers = preparedTool('go-helpers');
const hasGo = goHelpers !== undefined || process.env.CI === 'true'; // under CI a missing helper fails
if (!hasGo)
  console.warn('[argocd examples] skipping the Go text/template cross-check: go-helpers not prepared (run npm test)');

/** Renders templates with Go's text/template (tools/go-helpers/gotemplate), one row of results per parameter set. */
function renderWithGo(templates: readonly string[], params: readonly unknown[]): string[][] {
  const out = execFileSync(join(goHelpers ?? '', 'gotemplate'), {
    input: JSON.stringify({ templates, params }),
    encoding: 'utf8',
  });
  return (JSON.parse(out) as { results: string[][] }).results;
}

function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (value && typeof value === 'object') return Object.values(value).flatMap(stringsOf);
  return [];
}

/** Renders every string of the template, as Argo CD does field by field. */
function renderStrings(value: unknown, params: Record<string, unknown>, goTemplate: boolean): unknown {
  if (typeof value === 'string') return renderTemplate(value, params, goTemplate);
  if (Array.isArray(value)) return value.map((v) => renderStrings(v, params, goTemplate));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderStrings(v, params, goTemplate)]));
  }
  return value;
}

describe("MCO's sample ApplicationSets against the plugin's real answers", () => {
  let dir: string;
  let plugin: PluginServer;
  let client: GoClient;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mco-argocd-examples-'));
    writeFileSync(join(dir, 'token'), 't0ken');
    const profiles: ClusterProfile[] = [
      aClusterProfile('fleet-cluster-inventory/mco-cluster-us-east4', { labels: { environment: 'production' } }),
      aClusterProfile('fleet-cluster-inventory/mco-cluster-europe-west4', { labels: { environment: 'production' } }),
    ];
    // Each sample placement as the controller would have written it: one ACTIVE, one draining.
    const placements = samples.map(({ placement }) => ({
      ...placement,
      status: {
        observedGeneration: 1,
        clusters: [
          {
            name: 'mco-cluster-europe-west4',
            namespace: 'fleet-cluster-inventory',
            state: 'ACTIVE' as const,
            lastTransitionTime: T,
            // It replaces a lost cluster: its HPA starts at 6 replicas (rule O3).
            desiredMinReplicas: 6,
            replacesCluster: 'fleet-cluster-inventory/mco-cluster-lost',
          },
          {
            name: 'mco-cluster-us-east4',
            namespace: 'fleet-cluster-inventory',
            state: 'SCALING_IN' as const,
            lastTransitionTime: T,
            draining: { desiredMaxReplicas: 4, lastReplicaCountDecrease: T },
          },
        ],
      },
    }));
    const view = createStaticPlacementView({ placements, clusterProfiles: profiles });
    plugin = createPluginServer({ view, token: createFileTokenVerifier(join(dir, 'token')) });
    client = new GoClient((await plugin.listen(0, '127.0.0.1')).port);
  });

  afterAll(async () => {
    client.close();
    await plugin.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function answerFor(appSet: ApplicationSet): Promise<PluginParameters[]> {
    const generator = appSet.spec.generators[0] as { plugin: { input: { parameters: Record<string, unknown> } } };
    const response = await client.request({
      token: 't0ken',
      body: argoBody(appSet.metadata!.name!, generator.plugin.input.parameters),
    });
    expect(response.status).toBe(200);
    return (response.json() as { output: { parameters: PluginParameters[] } }).output.parameters;
  }

  it.each(samples)(
    '$name: the ApplicationSet asks for its own placement, a valid mco placement',
    ({ appSet, placement }) => {
      expect({
        placements: placementsOf(appSet),
        valid: PlacementSchema.safeParse(placement).success,
      }).toEqual({ placements: [`${placement.metadata.namespace}/${placement.metadata.name}`], valid: true });
    },
  );

  it.each(samples)(
    '$name: the template renders for every listed cluster with no missing parameter',
    async ({ name, appSet }) => {
      const suffix = name === 'hello-world' ? 'hw' : 'gs';
      const rendered = (await answerFor(appSet)).map((params) => {
        const template = renderStrings(
          appSet.spec.template,
          params as unknown as Record<string, unknown>,
          appSet.spec.goTemplate === true,
        ) as {
          metadata: { name: string };
          spec: { destination: { name: string } };
        };
        const patch = parseYaml(
          renderTemplate(appSet.spec.templatePatch ?? '', params as unknown as Record<string, unknown>),
        ) as {
          spec: { source: { helm: { parameters: unknown } } };
        };
        return {
          app: template.metadata.name,
          destination: template.spec.destination.name,
          helm: patch.spec.source.helm.parameters,
        };
      });
      expect(rendered).toEqual(
        name === 'hello-world'
          ? [
              {
                app: `fleet-cluster-inventory.mco-cluster-europe-west4-${suffix}`,
                destination: 'fleet-cluster-inventory.mco-cluster-europe-west4',
                helm: [{ name: 'hpa.minReplicas', value: '6' }],
              },
              {
                app: `fleet-cluster-inventory.mco-cluster-us-east4-${suffix}`,
                destination: 'fleet-cluster-inventory.mco-cluster-us-east4',
                helm: [
                  { name: 'hpa.minReplicas', value: '1' },
                  { name: 'hpa.maxReplicas', value: '4' },
                ],
              },
            ]
          : [
              {
                app: `fleet-cluster-inventory.mco-cluster-europe-west4-${suffix}`,
                destination: 'fleet-cluster-inventory.mco-cluster-europe-west4',
                helm: [{ name: 'hf_api_token', value: 'REPLACE_WITH_YOUR_HF_TOKEN' }],
              },
              {
                app: `fleet-cluster-inventory.mco-cluster-us-east4-${suffix}`,
                destination: 'fleet-cluster-inventory.mco-cluster-us-east4',
                helm: [{ name: 'hf_api_token', value: 'REPLACE_WITH_YOUR_HF_TOKEN' }],
              },
            ],
      );
    },
  );

  it("renders MCO's older fasttemplate form ({{name}} without goTemplate) against the same answer", async () => {
    const [params] = await answerFor(samples[0]!.appSet);
    expect(renderTemplate("'{{name}}-hw'", params as unknown as Record<string, unknown>, false)).toBe(
      "'fleet-cluster-inventory.mco-cluster-europe-west4-hw'",
    );
  });

  // The test renderer is checked against Go's text/template itself (the engine
  // Argo CD uses), on every string of both samples and the plugin's real answers.
  it.skipIf(!hasGo)('renders every sample string exactly as Go text/template with missingkey=error does', async () => {
    const templates = samples.flatMap(({ appSet }) => [
      ...stringsOf(appSet.spec.template),
      appSet.spec.templatePatch ?? '',
    ]);
    const params = [...(await answerFor(samples[0]!.appSet)), ...(await answerFor(samples[1]!.appSet))];
    const go = renderWithGo(templates, params);
    const ours = params.map((p) => templates.map((t) => renderTemplate(t, p as unknown as Record<string, unknown>)));
    expect({ errors: go.flat().filter((r) => r.startsWith('ERROR')), same: go }).toEqual({ errors: [], same: ours });
  });

  it('fails on a parameter the plugin does not return, as Argo CD does with missingkey=error', () => {
    expect(() => renderTemplate('{{ .clusterName }}', { name: 'x' })).toThrow('map has no entry for key "clusterName"');
  });
});

describeWithControlPlane('the samples on the real kube-apiserver', { tools: ['argocd'] }, () => {
  let plane: ControlPlane;

  beforeAll(async () => {
    plane = await startControlPlane();
    await plane.hub.installCrds([thirdPartyCrd('argoproj.io_applicationsets.yaml')]);
    await plane.hub.apply(
      ['argocd', 'hello-world-server', 'gemma-server'].map((name) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      })),
    );
  });

  afterAll(async () => {
    await plane?.stop();
  });

  it.each(samples)(
    "$name: the ApplicationSet is accepted by Argo CD's real CRD, nothing pruned",
    async ({ appSet }) => {
      const [applied] = await plane.hub.apply([appSet]);
      expect({
        kind: applied?.kind,
        namespace: applied?.metadata?.namespace,
        spec: (applied as ApplicationSet).spec,
      }).toEqual({
        kind: 'ApplicationSet',
        namespace: 'argocd',
        spec: appSet.spec,
      });
    },
  );
});
