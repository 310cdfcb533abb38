import { describe, expect, it } from 'vitest';
import { InventoryLossGuard, confirmedAt, INVENTORY_LOSS_CONFIRMED_ANNOTATION } from '../src/inventory-guard.js';

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

  it('releases on a confirmation given after the loss, taking the count then as the new baseline', () => {
    const guard = new InventoryLossGuard();
    feed(guard, [
      [0, 20],
      [1, 12],
    ]);
    const earlier = guard.confirm(0.5 * MIN, 12, 2 * MIN);
    const engagedAfterEarlier = guard.engaged;
    const confirmed = guard.confirm(2 * MIN, 12, 2 * MIN);
    const engagedAfterConfirmed = guard.engaged;
    // The next loss is measured from 12, not 20.
    const next = feed(guard, [
      [3, 10],
      [4, 7],
    ]);
    expect({ earlier, engagedAfterEarlier, confirmed, engagedAfterConfirmed, next }).toEqual({
      earlier: false,
      engagedAfterEarlier: true,
      confirmed: true,
      engagedAfterConfirmed: false,
      next: [undefined, 'engaged'],
    });
  });

  it('a further sudden loss while engaged needs a confirmation after it', () => {
    const guard = new InventoryLossGuard();
    feed(guard, [
      [0, 20],
      [1, 12],
      [3, 6],
    ]);
    expect([guard.confirm(2 * MIN, 6, 4 * MIN), guard.confirm(3 * MIN, 6, 4 * MIN)]).toEqual([false, true]);
  });

  it('reads the confirmation annotation; anything but a time is no confirmation', () => {
    expect([
      confirmedAt({ [INVENTORY_LOSS_CONFIRMED_ANNOTATION]: '2026-03-01T12:00:00Z' }),
      confirmedAt({ [INVENTORY_LOSS_CONFIRMED_ANNOTATION]: 'yes' }),
      confirmedAt(undefined),
    ]).toEqual([Date.parse('2026-03-01T12:00:00Z'), undefined, undefined]);
  });
});
