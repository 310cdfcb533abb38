// The third-party CRDs the tests install come from the repository or from the
// pinned Go modules the tool builds take them from (src/crds.ts). Every one
// of ours is checked against upstream's own copy (vendored in crds/upstream,
// or ../shared/crds beside the repository): same group, kind, scope and versions,
// and every field ours defines exists upstream with the same type, no enum
// value or required field upstream lacks, so a test never passes on an object
// the real CRD would reject or prune.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  loadYamlObjects,
  preparedTool,
  sharedCrdsDir,
  THIRD_PARTY_CRDS,
  thirdPartyCrd,
  type ThirdPartyCrd,
} from '../src/index.js';

interface Schema {
  type?: string;
  enum?: unknown[];
  required?: string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
}
interface Crd {
  spec: {
    group: string;
    scope: string;
    names: { kind: string };
    versions: { name: string; served: boolean; schema?: { openAPIV3Schema: Schema } }[];
  };
}

/** How `ours` differs from upstream's `theirs` where that could matter to a test, one line per difference. */
export function incompatibilities(ours: Schema, theirs: Schema | undefined, path: string): string[] {
  if (theirs === undefined) return [`${path}: not in upstream's schema`];
  const out: string[] = [];
  const type = (s: Schema) => (s['x-kubernetes-int-or-string'] ? 'int-or-string' : s.type);
  if (type(ours) !== undefined && type(ours) !== type(theirs))
    out.push(`${path}: type ${type(ours)}, upstream ${type(theirs) ?? 'any'}`);
  const extraEnum = (ours.enum ?? []).filter((v) => theirs.enum !== undefined && !theirs.enum.includes(v));
  if (extraEnum.length > 0) out.push(`${path}: enum values upstream lacks: ${extraEnum.join(', ')}`);
  const extraRequired = (ours.required ?? []).filter((r) => !(theirs.required ?? []).includes(r));
  if (extraRequired.length > 0)
    out.push(`${path}: required fields upstream does not require: ${extraRequired.join(', ')}`);
  // Below a level whose unknown fields upstream keeps, any field of ours is admitted as it is.
  const open = theirs['x-kubernetes-preserve-unknown-fields'] === true;
  for (const [key, child] of Object.entries(ours.properties ?? {})) {
    const upstream =
      theirs.properties?.[key] ??
      (typeof theirs.additionalProperties === 'object' ? theirs.additionalProperties : undefined);
    if (upstream === undefined && open) continue;
    out.push(...incompatibilities(child, upstream, `${path}.${key}`));
  }
  if (ours.items) out.push(...incompatibilities(ours.items, theirs.items, `${path}[]`));
  if (typeof ours.additionalProperties === 'object')
    out.push(
      ...incompatibilities(
        ours.additionalProperties,
        typeof theirs.additionalProperties === 'object' ? theirs.additionalProperties : undefined,
        `${path}{}`,
      ),
    );
  return out;
}

function summary(crd: Crd) {
  return {
    group: crd.spec.group,
    kind: crd.spec.names.kind,
    scope: crd.spec.scope,
    versions: crd.spec.versions.map((v) => `${v.name}${v.served ? '' : ' (not served)'}`).sort(),
  };
}

const shared = sharedCrdsDir();
const inCi = process.env.CI === 'true';
const names = Object.keys(THIRD_PARTY_CRDS) as ThirdPartyCrd[];
const toolOf = (name: ThirdPartyCrd): string | undefined => {
  const source = THIRD_PARTY_CRDS[name];
  return 'tool' in source ? source.tool : undefined;
};

describe("third-party CRDs against upstream's copies", () => {
  it.each(names.map((name) => ({ name, tool: toolOf(name) })))(
    '$name matches upstream: group, kind, scope, versions, and every field with its type',
    ({ name, tool }) => {
      if (tool !== undefined && !inCi && preparedTool(tool) === undefined) {
        console.log(`[testkit] ${name}: the tool ${tool} is not prepared; not compared`);
        return;
      }
      const upstreamFile = join(shared, name);
      expect(existsSync(upstreamFile)).toBe(true);
      const [ours] = loadYamlObjects(thirdPartyCrd(name)) as unknown as Crd[];
      const [theirs] = loadYamlObjects(upstreamFile) as unknown as Crd[];
      const differences = ours!.spec.versions.flatMap((version) =>
        incompatibilities(
          version.schema!.openAPIV3Schema,
          theirs!.spec.versions.find((v) => v.name === version.name)?.schema?.openAPIV3Schema,
          version.name,
        ),
      );
      expect({ ...summary(ours!), differences }).toEqual({ ...summary(theirs!), differences: [] });
    },
  );
});

describe('the cross-check itself', () => {
  const upstream: Schema = {
    type: 'object',
    required: ['repo'],
    properties: {
      repo: { type: 'string' },
      auth: { type: 'string', enum: ['none', 'token'] },
      values: { 'x-kubernetes-preserve-unknown-fields': true },
      labels: { type: 'object', additionalProperties: { type: 'string' } },
    },
  };
  it.each([
    ['a subset with the same types', { type: 'object', properties: { repo: { type: 'string' } } }, []],
    [
      'a field upstream lacks, a wrong type, an enum value and a requirement upstream does not have',
      {
        type: 'object',
        required: ['repo', 'auth'],
        properties: {
          repo: { type: 'integer' },
          auth: { type: 'string', enum: ['none', 'ssh'] },
          branch: { type: 'string' },
        },
      },
      [
        'v1: required fields upstream does not require: auth',
        'v1.repo: type integer, upstream string',
        'v1.auth: enum values upstream lacks: ssh',
        "v1.branch: not in upstream's schema",
      ],
    ],
    [
      'fields below an open object of upstream, and map values',
      {
        type: 'object',
        properties: {
          values: { type: 'object', properties: { mco: { type: 'object' } } },
          labels: { type: 'object', additionalProperties: { type: 'integer' } },
        },
      },
      ['v1.values: type object, upstream any', 'v1.labels{}: type integer, upstream string'],
    ],
  ] as [string, Schema, string[]][])('finds %s', (_, ours, expected) => {
    expect(incompatibilities(ours, upstream, 'v1')).toEqual(expected);
  });
});
