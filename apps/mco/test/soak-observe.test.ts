// The soak's observer turns what its watches and re-lists see of a workload
// object into history events: presence changes only, each with its uid, and
// a deletion the watch missed (the object present again under another uid).
import { describe, expect, it } from 'vitest';
import { objectChanges } from '../soak/observe.js';

describe('objectChanges', () => {
  it('records the first sight, a deletion and a re-creation, each with its uid', () => {
    const first = objectChanges(undefined, true, 'u1', false);
    expect(first.changes).toEqual([{ present: true, uid: 'u1' }]);
    expect(objectChanges(first.now, true, 'u1', false).changes).toEqual([]); // a status update
    const gone = objectChanges(first.now, false, 'u1', false);
    expect(gone.changes).toEqual([{ present: false, uid: 'u1' }]);
    // Created again after a recorded deletion: a creation only (a 3-minute soak once flagged it as a deletion).
    expect(objectChanges(gone.now, true, 'u2', true).changes).toEqual([{ present: true, gap: true, uid: 'u2' }]);
  });

  it('records a deletion the watch missed when a re-list finds the object under another uid', () => {
    const first = objectChanges(undefined, true, 'u1', false);
    expect(objectChanges(first.now, true, 'u2', true).changes).toEqual([
      { present: false, gap: true, uid: 'u1' },
      { present: true, gap: true, uid: 'u2' },
    ]);
  });

  it('records a deletion found by a re-list as such, and nothing for an object never seen present', () => {
    const first = objectChanges(undefined, true, 'u1', false);
    expect(objectChanges(first.now, false, 'u1', true).changes).toEqual([{ present: false, gap: true, uid: 'u1' }]);
    expect(objectChanges(undefined, false, 'u1', false).changes).toEqual([]);
  });
});
