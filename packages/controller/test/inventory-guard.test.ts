import { describe, expect, it } from 'vitest';
import { InventoryLossGuard, INVENTORY_LOSS_CONFIRMATION, readConfirmation } from '../src/inventory-guard.js';

const MIN = 60_000;

/** Feeds `[minute, count]` samples; returns what each one changed. */
function feed(guard: InventoryLossGuard, samples: [number, number][]): (string | undefined)[] {
  return samples.map(([minute, count]) => guard.observe(count, minute * MIN));
}

describe('the inventory-loss guard (docs/placement-rules.md §10.5)', () => {
  it('engages when more than 30% and at least 3 profiles vanish within 5 minutes, and releases when they return', () => {
    const guard = new InventoryLossGuard();
    const changes = feed(guard, [
      [0, 10],
      [1, 9],
      [2, 6], // 4 of 10 within the window
      [3, 6],
      [4, 8], // 2 of 10 still missing: within the threshold
    ]);
    expect(changes).toEqual([undefined, undefined, 'engaged', undefined, 'released']);
  });

  it('does not engage for a small fleet losing fewer than 3, nor for 30% exactly, nor for a slow decline', () => {
    const small = feed(new InventoryLossGuard(), [
      [0, 5],
      [1, 3],
    ]);
    const exactly = feed(new InventoryLossGuard(), [
      [0, 10],
      [1, 7],
    ]);
    const slow = feed(new InventoryLossGuard(), [
      [0, 10],
      [3, 8],
      [6, 7], // 10 -> 7 -> the count at the window's start is 8
      [12, 5],
      [18, 3],
    ]);
    expect({ small, exactly, slow }).toEqual({
      small: [undefined, undefined],
      exactly: [undefined, undefined],
      slow: [undefined, undefined, undefined, undefined, undefined],
    });
  });

  it('sees a sudden drop after a long quiet spell (the count holds between samples)', () => {
    expect(
      feed(new InventoryLossGuard(), [
        [0, 10],
        [60, 0],
      ]),
    ).toEqual([undefined, 'engaged']);
  });

  /** A confirmation written at `minute`, as the object's version `version`. */
  const confirmation = (minute: number, version: string) => ({ at: minute * MIN, version });

  it('releases on a confirmation written after the loss, taking the count then as the new baseline', () => {
    const guard = new InventoryLossGuard();
    // The confirmation object was at version 1 when the loss was seen.
    guard.observe(20, 0, '1');
    guard.observe(12, 1 * MIN, '1');
    const earlier = guard.confirm(confirmation(0.5, '2'), 12, 2 * MIN);
    const engagedAfterEarlier = guard.engaged;
    const confirmed = guard.confirm(confirmation(2, '2'), 12, 2 * MIN);
    const engagedAfterConfirmed = guard.engaged;
    // The next loss is measured from 12, not 20.
    const next = feed(guard, [
      [3, 10],
      [4, 7],
    ]);
    expect({ earlier, engagedAfterEarlier, confirmed, engagedAfterConfirmed, next }).toEqual({
      earlier: 'before',
      engagedAfterEarlier: true,
      confirmed: 'released',
      engagedAfterConfirmed: false,
      next: [undefined, 'engaged'],
    });
  });

  it('what a confirmation confirms: only the losses seen before it was written, never a later one', () => {
    // [case, confirmation version when the loss was seen, the confirmation now, the controller's clock (minutes)]
    const cases: [string, string | undefined, { at: number; version: string } | undefined, number][] = [
      ['none', undefined, undefined, 2],
      ['written after the loss (no object before)', undefined, confirmation(2, '5'), 2],
      ['written after the loss (a new write)', '4', confirmation(2, '5'), 2],
      // The same write as when the loss was seen: written before it, whatever time it names.
      ['written before the loss, naming a time after it', '5', confirmation(1.5, '5'), 2],
      ['written before the loss, naming a time within the clock allowance', '5', confirmation(2.9, '5'), 2],
      ['a new write naming a time before the loss', '4', confirmation(0.5, '5'), 2],
      ['a time 60 s ahead of the clock (the allowance)', '4', confirmation(3, '5'), 2],
      ['a time more than 60 s ahead of the clock', '4', { at: 3 * MIN + 1, version: '5' }, 2],
      ['the year 2999, written before the loss', '5', { at: Date.parse('2999-01-01T00:00:00Z'), version: '5' }, 2],
    ];
    const outcomes = cases.map(([name, seen, given, now]) => {
      const guard = new InventoryLossGuard();
      guard.observe(10, 0, seen);
      guard.observe(6, 1 * MIN, seen);
      return [name, guard.confirm(given, 6, now * MIN), guard.engaged];
    });
    expect(outcomes).toEqual([
      ['none', undefined, true],
      ['written after the loss (no object before)', 'released', false],
      ['written after the loss (a new write)', 'released', false],
      ['written before the loss, naming a time after it', undefined, true],
      ['written before the loss, naming a time within the clock allowance', undefined, true],
      ['a new write naming a time before the loss', 'before', true],
      ['a time 60 s ahead of the clock (the allowance)', 'released', false],
      ['a time more than 60 s ahead of the clock', 'ahead', true],
      ['the year 2999, written before the loss', 'ahead', true],
    ]);
  });

  it('a confirmation does nothing while the guard is not engaged, and does not carry over to a later loss', () => {
    const guard = new InventoryLossGuard();
    guard.observe(10, 0, undefined);
    // Written (and naming a far future) before any loss.
    const idle = guard.confirm({ at: Date.parse('2999-01-01T00:00:00Z'), version: '7' }, 10, 1 * MIN);
    guard.observe(6, 2 * MIN, '7');
    const later = guard.confirm(confirmation(2.5, '7'), 6, 3 * MIN);
    expect({ idle, later, engaged: guard.engaged }).toEqual({ idle: undefined, later: undefined, engaged: true });
  });

  it('a further sudden loss while engaged needs a confirmation written after it', () => {
    const guard = new InventoryLossGuard();
    guard.observe(20, 0, '1');
    guard.observe(12, 1 * MIN, '1');
    // Confirmed at minute 2 (version 2), not yet read; at minute 3 the count falls again.
    guard.observe(6, 3 * MIN, '2');
    expect([
      guard.confirm(confirmation(2, '2'), 6, 4 * MIN),
      guard.confirm(confirmation(2.5, '3'), 6, 4 * MIN),
      guard.confirm(confirmation(3, '3'), 6, 4 * MIN),
    ]).toEqual([undefined, 'before', 'released']);
  });

  it('reads the confirmation ConfigMap; anything but an RFC 3339 time in data.confirmedAt is an error naming the field', () => {
    const configMap = (data?: Record<string, string>) => ({
      metadata: { name: INVENTORY_LOSS_CONFIRMATION, namespace: 'mco-system', resourceVersion: '42' },
      ...(data ? { data } : {}),
    });
    expect([
      readConfirmation(configMap({ confirmedAt: '2026-03-01T12:00:00Z' })),
      readConfirmation(configMap({ confirmedAt: '2026-03-01T13:00:00.5+01:00' })),
      readConfirmation(configMap({ confirmedAt: 'yes' })),
      readConfirmation(configMap({ confirmedAt: '2026-03-01' })),
      readConfirmation(configMap({ confirmedAt: 'March 1, 2026 12:00' })),
      readConfirmation(configMap()),
      readConfirmation(undefined),
    ]).toEqual([
      { at: Date.parse('2026-03-01T12:00:00Z'), version: '42' },
      { at: Date.parse('2026-03-01T12:00:00.5Z'), version: '42' },
      { error: expect.stringMatching(/^data\.confirmedAt: expected an RFC 3339 time .*, got "yes"$/) },
      { error: expect.stringMatching(/got "2026-03-01"$/) },
      { error: expect.stringMatching(/got "March 1, 2026 12:00"$/) },
      { error: expect.stringMatching(/^data\.confirmedAt: .* got null$/) },
      undefined,
    ]);
  });
});
