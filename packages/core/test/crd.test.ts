import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadYamlObjects, thirdPartyCrd } from '@mco/testkit';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  buildPlacementCrd,
  GOOGLE_V0_2_0_PATHS,
  PLACEMENT_CRD_FILE,
  renderPlacementCrd,
  structuralSchemaOf,
  type SchemaNode,
} from '../scripts/placement-crd.js';

const COMMITTED = fileURLToPath(new URL(`../crds/${PLACEMENT_CRD_FILE}`, import.meta.url));
const GOOGLE_CRD_FILE = 'reference-mco-v0.2.0_multikubernetesclusterplacements.yaml';

type Versioned = { spec: { versions: { schema: { openAPIV3Schema: SchemaNode } }[] } };
const rootSchema = (crd: unknown) => (crd as Versioned).spec.versions[0]!.schema.openAPIV3Schema;

/** Every schema node with its path (`a.b[].c`, `m{}` for map values). */
function nodes(node: SchemaNode, path = ''): [string, SchemaNode][] {
  return [
    [path, node],
    ...Object.entries(node.properties ?? {}).flatMap(([k, v]) => nodes(v, path ? `${path}.${k}` : k)),
    ...(node.items ? nodes(node.items, `${path}[]`) : []),
    ...(node.additionalProperties ? nodes(node.additionalProperties, `${path}{}`) : []),
  ];
}

describe('the MultiKubernetesClusterPlacement CRD generated from the zod schemas', () => {
  it('is committed as generated (when this fails, run `npm run crds -w @mco/core` and commit the result)', () => {
    expect(readFileSync(COMMITTED, 'utf8')).toBe(renderPlacementCrd());
  });

  it('uses only what a structural schema allows: a type everywhere, no unions, refs or patterns', () => {
    const forbidden = ['anyOf', 'oneOf', 'allOf', 'not', '$ref', 'pattern', 'uniqueItems', 'const', 'default'];
    const problems = nodes(rootSchema(buildPlacementCrd())).flatMap(([path, node]) => [
      ...(node.type ? [] : [`${path}: no type`]),
      ...forbidden.filter((k) => k in node).map((k) => `${path}: ${k}`),
      ...((node as { additionalProperties?: unknown }).additionalProperties === false
        ? [`${path}: additionalProperties false`]
        : []),
    ]);
    expect(problems).toEqual([]);
  });

  it.each([
    {
      name: 'a union becomes a problem instead of anyOf',
      schema: z.object({ a: z.union([z.string(), z.number()]).describe('a') }).describe('x'),
      problems: ['x.a: "anyOf" cannot be expressed in a structural CRD schema', 'x.a: no type'],
    },
    {
      name: 'a JS regex is refused (CRD patterns are Go RE2)',
      schema: z
        .object({
          a: z
            .string()
            .regex(/^a(?=b)/)
            .describe('a'),
        })
        .describe('x'),
      problems: ['x.a: "pattern" cannot be expressed in a structural CRD schema'],
    },
    {
      name: 'a field without a description is refused (kubectl explain)',
      schema: z.object({ a: z.string() }).describe('x'),
      problems: ['x.a: no description (kubectl explain)'],
    },
  ])('$name', ({ schema, problems }) => {
    expect(structuralSchemaOf(schema, 'x').problems).toEqual(problems);
  });

  it('turns a strict object, a map, an int and a timestamp into their structural forms', () => {
    const { schema } = structuralSchemaOf(
      z
        .strictObject({
          m: z.record(z.string(), z.string().max(8)).describe('m'),
          n: z.int().describe('n'),
          t: z.iso.datetime().describe('t'),
        })
        .describe('x'),
      'x',
    );
    expect(schema).toEqual({
      description: 'x',
      type: 'object',
      properties: {
        m: { description: 'm', type: 'object', additionalProperties: { type: 'string', maxLength: 8 } },
        n: { description: 'n', type: 'integer' },
        t: { description: 't', type: 'string', format: 'date-time' },
      },
      required: ['m', 'n', 't'],
    });
  });
});

describe('compatibility of the generated schema with Google’s MCO v0.2.0 CRD (static; the real-server check is in integration/)', () => {
  const google = () => rootSchema(loadYamlObjects(thirdPartyCrd(GOOGLE_CRD_FILE))[0]);

  it('lists exactly the fields Google’s CRD defines as the ones to keep unbounded', () => {
    const paths = nodes(google())
      .map(([path]) => path)
      // apiVersion, kind and metadata are not generated from zod.
      .filter((p) => p.split(/[.[]/)[0] === 'spec' || p.split(/[.[]/)[0] === 'status');
    expect([...GOOGLE_V0_2_0_PATHS].sort()).toEqual(paths.sort());
  });

  it('is no stricter than Google’s on any of its fields: same type and format, no extra bound, enum or required field', () => {
    const ours = new Map(nodes(rootSchema(buildPlacementCrd())));
    const bounds = ['minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems'] as const;
    const stricter = nodes(google()).flatMap(([path, theirs]) => {
      const mine = ours.get(path);
      if (!mine) return [`${path}: missing`];
      return [
        ...(mine.type !== theirs.type ? [`${path}: type ${mine.type} vs ${theirs.type}`] : []),
        ...(mine.format !== theirs.format ? [`${path}: format ${mine.format} vs ${theirs.format}`] : []),
        ...bounds.filter((b) => mine[b] !== theirs[b]).map((b) => `${path}: ${b} ${mine[b]} vs ${theirs[b]}`),
        ...(JSON.stringify(mine.enum) !== JSON.stringify(theirs.enum) ? [`${path}: enum differs`] : []),
        ...(mine.required ?? [])
          .filter((r) => !(theirs.required ?? []).includes(r))
          .map((r) => `${path}: requires ${r}`),
      ];
    });
    expect(stricter).toEqual([]);
  });
});
