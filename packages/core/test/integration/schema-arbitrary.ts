import fc from 'fast-check';

/** The parts of an OpenAPI v3 CRD schema that Google's v0.2.0 MKCP CRD uses. */
export interface CrdSchema {
  type?: string;
  format?: string;
  enum?: string[];
  minimum?: number;
  properties?: Record<string, CrdSchema>;
  items?: CrdSchema;
  required?: string[];
  'x-kubernetes-validations'?: { rule: string }[];
}

/**
 * JS versions of the CEL rules the schema is known to carry. An unknown rule
 * fails loudly: the generator must learn it, or it would make objects the
 * server rejects (or miss a whole class of valid ones).
 */
const KNOWN_RULES: Readonly<Record<string, (value: Record<string, unknown>) => boolean>> = {
  [[
    '(has(self.requiredDuringSchedulingRequiredDuringExecution)',
    '&& !has(self.requiredDuringSchedulingIgnoredDuringExecution))',
    '|| (!has(self.requiredDuringSchedulingRequiredDuringExecution)',
    '&& has(self.requiredDuringSchedulingIgnoredDuringExecution))',
  ].join(' ')]: (v) =>
    'requiredDuringSchedulingRequiredDuringExecution' in v !== 'requiredDuringSchedulingIgnoredDuringExecution' in v,
};

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * RFC 3339 date-times in the spellings Kubernetes' `format: date-time` accepts:
 * any year 0001-9999, optional fraction, `Z`/`z` or a numeric offset.
 */
export const arbDateTime: fc.Arbitrary<string> = fc
  .record({
    year: fc.integer({ min: 1, max: 9999 }),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.integer({ min: 1, max: 28 }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.integer({ min: 0, max: 59 }),
    fraction: fc.option(fc.stringMatching(/^[0-9]{1,9}$/), { nil: undefined }),
    zone: fc.oneof(
      fc.constantFrom('Z', 'z'),
      fc
        .tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }))
        .map(([sign, h, m]) => `${sign}${pad(h)}:${pad(m)}`),
    ),
  })
  .map(
    (t) =>
      `${pad(t.year, 4)}-${pad(t.month)}-${pad(t.day)}T${pad(t.hour)}:${pad(t.minute)}:${pad(t.second)}` +
      `${t.fraction ? `.${t.fraction}` : ''}${t.zone}`,
  );

/** Mostly short strings (any Unicode), sometimes longer than any bound mco puts on its own fields. */
const arbString: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ minLength: 1100, maxLength: 5000 }) },
);

/** Small integers usually, the whole JSON-safe int64 range sometimes. */
const arbInteger = (minimum: number | undefined): fc.Arbitrary<number> => {
  const min = minimum ?? Number.MIN_SAFE_INTEGER;
  return fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: Math.max(min, -5), max: 20 }) },
    { weight: 1, arbitrary: fc.maxSafeInteger().filter((n) => n >= min) },
  );
};

/**
 * Values valid for a structural CRD schema, built from the schema itself, so
 * the objects are exactly what that CRD admits (within the value spaces above).
 */
export function arbitraryFromSchema(schema: CrdSchema, path = ''): fc.Arbitrary<unknown> {
  switch (schema.type) {
    case 'object': {
      const properties = schema.properties ?? {};
      const record = fc.record(
        Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, arbitraryFromSchema(v, `${path}.${k}`)])),
        { requiredKeys: (schema.required ?? []).filter((k) => k in properties) },
      );
      const checks = (schema['x-kubernetes-validations'] ?? []).map(({ rule }) => {
        const check = KNOWN_RULES[rule];
        if (!check) throw new Error(`${path}: unknown CEL rule, teach schema-arbitrary.ts: ${rule}`);
        return check;
      });
      return checks.length === 0
        ? record
        : record.filter((value) => checks.every((check) => check(value as Record<string, unknown>)));
    }
    case 'array': {
      const item = arbitraryFromSchema(schema.items ?? {}, `${path}[]`);
      // Long lists only of scalars, so objects stay far below the request size limit.
      const long = schema.items?.type !== 'object' && schema.items?.type !== 'array';
      return long
        ? fc.oneof(
            { weight: 6, arbitrary: fc.array(item, { maxLength: 3 }) },
            fc.array(item, { minLength: 257, maxLength: 300 }),
          )
        : fc.array(item, { maxLength: 3 });
    }
    case 'string':
      if (schema.enum) return fc.constantFrom(...schema.enum);
      if (schema.format === 'date-time') return arbDateTime;
      if (schema.format) throw new Error(`${path}: unknown string format ${schema.format}`);
      return arbString;
    case 'integer':
      return arbInteger(schema.minimum);
    case 'boolean':
      return fc.boolean();
    default:
      throw new Error(`${path}: unsupported schema type ${String(schema.type)}`);
  }
}
