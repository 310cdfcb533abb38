/** One entry of `metadata.managedFields` (only what the projection needs). */
export interface ManagedFieldsEntry {
  readonly manager?: string;
  readonly operation?: string;
  readonly subresource?: string;
  readonly fieldsV1?: unknown;
}

/**
 * The part of `object` that `manager` owns through server-side apply on
 * `subresource` ('' for the main resource), read from its managedFields
 * (the `fieldsV1` format: `f:<field>`, `k:<json key>`, `v:<json value>`, `i:<index>`).
 * Comparing this with what the manager would apply tells whether an apply
 * would change anything, without sending it.
 */
export function projectOwnedFields(object: unknown, manager: string, subresource = ''): Record<string, unknown> {
  const entries = (object as { metadata?: { managedFields?: readonly ManagedFieldsEntry[] } })?.metadata?.managedFields;
  const entry = entries?.find(
    (e) => e.manager === manager && e.operation === 'Apply' && (e.subresource ?? '') === subresource,
  );
  if (!entry || !isRecord(entry.fieldsV1)) return {};
  const projected = project(object, entry.fieldsV1);
  return isRecord(projected) ? projected : {};
}

function project(value: unknown, fields: Record<string, unknown>): unknown {
  const children = Object.entries(fields).filter(([key]) => key !== '.');
  // A leaf (`{}` or only `.`) owns the whole value.
  if (children.length === 0) return value;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const [key, sub] of children) {
      const item = findListItem(value, key);
      if (item !== undefined) out.push(isRecord(sub) ? project(item, sub) : item);
    }
    return out;
  }
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, sub] of children) {
    if (!key.startsWith('f:')) continue;
    const name = key.slice(2);
    if (!(name in value)) continue;
    out[name] = isRecord(sub) ? project(value[name], sub) : value[name];
  }
  return out;
}

function findListItem(list: readonly unknown[], key: string): unknown {
  const body = key.slice(2);
  if (key.startsWith('i:')) return list[Number(body)];
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (key.startsWith('v:')) return list.find((item) => canonicalJson(item) === canonicalJson(parsed));
  if (key.startsWith('k:') && isRecord(parsed)) {
    const wanted = Object.entries(parsed);
    return list.find((item) => isRecord(item) && wanted.every(([k, v]) => canonicalJson(item[k]) === canonicalJson(v)));
  }
  return undefined;
}

/**
 * JSON with sorted object keys, without empty objects/arrays and undefined
 * values, and with lists of named items (`name` or `type`, the list-map keys
 * of ClusterProfile) sorted by that key: two values that an apply treats as the
 * same serialise the same.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonicalize(value)) ?? 'null';
}

function canonicalize(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(canonicalize).filter((v) => v !== undefined);
    const key = (item: unknown) => (isRecord(item) ? String(item.name ?? item.type ?? '') : '');
    const sortable = items.length > 1 && items.every((item) => key(item) !== '');
    const sorted = sortable ? [...items].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)) : items;
    return sorted.length === 0 ? undefined : sorted;
  }
  if (isRecord(value)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = canonicalize(value[key]);
      if (v !== undefined) out[key] = v;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  return value ?? undefined;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
