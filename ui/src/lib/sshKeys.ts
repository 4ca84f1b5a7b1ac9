// What a change to one's SSH keys starts: an update SSH keys job on each
// of one's own live clusters (an admin's cluster list holds others' too).

/**
 * liveClusterCount says how many of the listed live clusters are owner's,
 * "N clusters" or "1 cluster", with "at least" when the list was cut.
 */
export function liveClusterCount(clusters: readonly { owner: string }[], owner: string, more: boolean): string {
  const n = clusters.filter((c) => c.owner === owner).length;
  const noun = n === 1 ? 'cluster' : 'clusters';
  return more ? `at least ${n} ${noun}` : `${n} ${noun}`;
}
