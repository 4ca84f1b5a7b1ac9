/**
 * The services a check had no way to look at (no status action, no systemd
 * units; docs/catalog.md#systemd-units) over all nodes, once each, sorted:
 * no finding, and not known to run either.
 */
export function uncheckedServices(nodes: readonly { unchecked: readonly string[] }[]): string[] {
  return [...new Set(nodes.flatMap((n) => n.unchecked))].sort();
}
