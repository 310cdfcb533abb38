import { describe, expect, it } from 'vitest';
import { InventoryLossGuard, type InventoryLoss } from '../src/inventory-guard.js';
import { INVENTORY_LOSS_ANNOTATION, readLoss } from '../src/inventory-loss-state.js';
import { fieldManagerOf, membersLeaseName, shardLeaseName, shardOf } from '../src/shards.js';

describe('shards', () => {
  it('a placement keeps its shard (FNV-1a of namespace/name), and 1,000 keys spread over 8 shards', () => {
    const keys = Array.from({ length: 1000 }, (_, i) => `apps-${i % 10}/p-${i}`);
    const counts = new Array<number>(8).fill(0);
    for (const key of keys) counts[shardOf(key, 8)]!++;
    expect({
      // FNV-1a's published vectors (with the modulus 2^32, the hash itself): a change of the hash would
      // move placements to other shards on upgrade.
      vectors: ['', 'a', 'foobar'].map((k) => shardOf(k, 2 ** 32).toString(16)),
      oneShard: keys.every((k) => shardOf(k, 1) === 0),
      spread: counts.every((n) => n > 1000 / 8 / 2 && n < (1000 / 8) * 1.5),
    }).toEqual({ vectors: ['811c9dc5', 'e40c292c', 'bf9cf968'], oneShard: true, spread: true });
  });

  it('names the Leases: shard 0 is the former leader Lease, then <name>-<i> and <name>-members', () => {
    expect([shardLeaseName('mco-controller', 0), shardLeaseName('mco-controller', 7), membersLeaseName('x')]).toEqual([
      'mco-controller',
      'mco-controller-7',
      'x-members',
    ]);
  });

  it('the field manager is the identity, cut to the API server limit of 128 characters keeping it unique', () => {
    const long = `mco-system/mco/${'p'.repeat(150)}`;
    const other = `${long.slice(0, -1)}q`;
    expect({
      short: fieldManagerOf('mco-system/mco/mco-controller-0_ab12'),
      length: fieldManagerOf(long).length,
      distinct: fieldManagerOf(long) !== fieldManagerOf(other),
    }).toEqual({ short: 'mco-system/mco/mco-controller-0_ab12', length: 128, distinct: true });
  });
});

describe('the inventory-loss state replicas share (docs/placement-rules.md §10.5)', () => {
  const MIN = 60_000;
  const engaged = () => {
    const guard = new InventoryLossGuard();
    guard.observe(10, 0, 'v1');
    guard.observe(5, MIN, 'v1');
    return guard;
  };

  it('a replica that started after the loss adopts it and releases exactly as the one that saw it', () => {
    const seen = engaged();
    const late = new InventoryLossGuard();
    late.observe(5, 2 * MIN, 'v1'); // its first count is already the low one: alone it would not engage
    const before = late.engaged;
    const adopted = late.adopt(seen.snapshot()!, 2 * MIN);
    const refusedOld = late.confirm({ at: 30_000, version: 'v2' }, 5, 3 * MIN); // dated before the loss
    const released = [seen, late].map((g) => g.confirm({ at: 2 * MIN, version: 'v2' }, 5, 3 * MIN));
    expect({ before, adopted, refusedOld, released, after: late.engaged }).toEqual({
      before: false,
      adopted: true,
      refusedOld: 'before',
      released: ['released', 'released'],
      after: false,
    });
  });

  it('reports its own changes, not adopted ones, and never takes back a loss it released or a lesser one', () => {
    const guard = new InventoryLossGuard();
    const changes: [InventoryLoss | undefined, InventoryLoss | undefined][] = [];
    guard.onChange((loss, previous) => changes.push([loss, previous]));
    guard.observe(10, 0, 'v1');
    guard.observe(5, MIN, 'v1');
    guard.observe(4, 2 * MIN, 'v1'); // lower still: the low changes
    const lesser = guard.adopt({ baseline: 10, since: MIN, low: 5, confirmationVersion: 'v1' }, 2 * MIN);
    const loss = guard.snapshot()!;
    guard.observe(9, 3 * MIN, 'v1'); // recovered
    const stale = guard.adopt(loss, 3 * MIN);
    expect({
      changes: changes.map(([l, p]) => [l?.low ?? null, p?.low ?? null]),
      lesser,
      stale,
      engaged: guard.engaged,
    }).toEqual({
      changes: [
        [5, null],
        [4, 5],
        [null, 4],
      ],
      lesser: false,
      stale: false,
      engaged: false,
    });
  });

  it('reads the recorded loss from the Lease annotation; anything unreadable is no loss', () => {
    const lease = (text: string | undefined) => ({
      metadata: {
        annotations: text === undefined ? {} : ({ [INVENTORY_LOSS_ANNOTATION]: text } as Record<string, string>),
      },
    });
    expect([
      readLoss(lease('{"baseline":10,"since":60000,"low":5,"confirmationVersion":"7"}')),
      readLoss(lease('{"baseline":10,"since":"soon","low":5}')),
      readLoss(lease('not json')),
      readLoss(lease(undefined)),
    ]).toEqual([{ baseline: 10, since: 60_000, low: 5, confirmationVersion: '7' }, undefined, undefined, undefined]);
  });

  it.each([
    ['oversized', `{"baseline":10,"since":60000,"low":5,"confirmationVersion":"7","pad":"${'x'.repeat(1100)}"}`],
    ['a count beyond any fleet', '{"baseline":1e9,"since":60000,"low":0}'],
    ['a fractional count', '{"baseline":10.5,"since":60000,"low":5}'],
    ['a negative low', '{"baseline":10,"since":60000,"low":-1}'],
    ['low not below the baseline', '{"baseline":5,"since":60000,"low":5}'],
    ['a long confirmation version', `{"baseline":10,"since":60000,"low":5,"confirmationVersion":"${'9'.repeat(65)}"}`],
    ['a confirmation version that is not a string', '{"baseline":10,"since":60000,"low":5,"confirmationVersion":7}'],
  ])('reads no loss from a record that is %s', (_name, text) => {
    expect(readLoss({ metadata: { annotations: { [INVENTORY_LOSS_ANNOTATION]: text } } })).toBeUndefined();
  });

  it('adopts no forged record: one its rules would not call a loss, or one seen in the future; a confirmation releases what it adopted', () => {
    const guard = new InventoryLossGuard();
    guard.observe(10, 0, 'v1');
    const notALoss = guard.adopt({ baseline: 10, since: MIN, low: 9, confirmationVersion: 'v1' }, 2 * MIN);
    const future = guard.adopt({ baseline: 10, since: 1e15, low: 0, confirmationVersion: 'v1' }, 2 * MIN);
    const forged = guard.adopt({ baseline: 1000, since: 2 * MIN, low: 0, confirmationVersion: 'v1' }, 2 * MIN);
    const confirmed = guard.confirm({ at: 3 * MIN, version: 'v2' }, 10, 3 * MIN);
    expect({ notALoss, future, forged, confirmed, engaged: guard.engaged }).toEqual({
      notALoss: false,
      future: false,
      forged: true,
      confirmed: 'released',
      engaged: false,
    });
  });
});
