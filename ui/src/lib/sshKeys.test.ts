import { describe, expect, it } from 'vitest';
import { liveClusterCount } from './sshKeys';

describe('liveClusterCount', () => {
  it.each([
    { owners: ['alice', 'bob', 'alice'], more: false, want: '2 clusters' },
    { owners: ['bob', 'alice'], more: false, want: '1 cluster' },
    { owners: ['bob'], more: false, want: '0 clusters' },
    { owners: ['alice', 'alice'], more: true, want: 'at least 2 clusters' },
  ])('counts $owners for alice ($want)', ({ owners, more, want }) => {
    expect(
      liveClusterCount(
        owners.map((owner) => ({ owner })),
        'alice',
        more,
      ),
    ).toBe(want);
  });
});
