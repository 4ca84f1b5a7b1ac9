// The catalog's kinds as the admin views name them: the API's enum, a
// label, and the slug in the views' URLs (/admin/catalog/services/web).
import type { CatalogKind } from '../gql/graphql';

export interface KindInfo {
  kind: CatalogKind;
  label: string;
  /** One entity, lower case: "cluster template". */
  singular: string;
  slug: string;
  /** Shared by every tenant: only the superadmin writes them. */
  shared: boolean;
}

export const catalogKinds: readonly KindInfo[] = [
  {
    kind: 'CLUSTERTEMPLATES',
    label: 'Templates',
    singular: 'cluster template',
    slug: 'clustertemplates',
    shared: false,
  },
  {
    kind: 'PARTIALTEMPLATES',
    label: 'Partials',
    singular: 'partial template',
    slug: 'partialtemplates',
    shared: false,
  },
  { kind: 'SERVICES', label: 'Services', singular: 'service', slug: 'services', shared: false },
  { kind: 'PROVIDERS', label: 'Providers', singular: 'provider', slug: 'providers', shared: false },
  { kind: 'HARDWARETYPES', label: 'Hardware', singular: 'hardware type', slug: 'hardwaretypes', shared: false },
  { kind: 'IMAGETYPES', label: 'Images', singular: 'image type', slug: 'imagetypes', shared: false },
  { kind: 'PROVIDERTYPES', label: 'Provider types', singular: 'provider type', slug: 'providertypes', shared: true },
  {
    kind: 'AUTOMATORTYPES',
    label: 'Automator types',
    singular: 'automator type',
    slug: 'automatortypes',
    shared: true,
  },
];

export function kindBySlug(slug: string | undefined): KindInfo | undefined {
  return catalogKinds.find((k) => k.slug === slug);
}

export function kindInfo(kind: CatalogKind): KindInfo {
  return catalogKinds.find((k) => k.kind === kind)!;
}

/** entityPath is the admin page of an entity (or of a new one, name undefined). */
export function entityPath(k: KindInfo, name?: string): string {
  return `/admin/catalog/${k.slug}/${name === undefined ? 'new' : encodeURIComponent(name)}`;
}

/** REDACTED stands in for a sensitive provider value in every read; writing it back keeps the value. */
export const REDACTED = '__redacted__';

/** fileKind reads a catalog file's kind from its directory, as `coopr catalog import DIR` does. */
export function fileKind(relativePath: string): KindInfo | undefined {
  const dirs = relativePath.split('/').slice(0, -1);
  for (let i = dirs.length - 1; i >= 0; i--) {
    const k = kindBySlug(dirs[i]);
    if (k) return k;
  }
  return undefined;
}

/**
 * bundleFromFiles makes one import document from catalog files: a file in
 * a directory named after a kind is one entity of it; a file elsewhere must
 * be a bundle ({"services": [...], ...}) and adds its lists. Files that are
 * neither are returned as skipped, with why.
 */
export function bundleFromFiles(files: readonly { path: string; text: string }[]): {
  bundle: Record<string, unknown[]>;
  skipped: { path: string; why: string }[];
} {
  const bundle: Record<string, unknown[]> = {};
  const skipped: { path: string; why: string }[] = [];
  for (const f of files) {
    if (!f.path.endsWith('.json')) {
      skipped.push({ path: f.path, why: 'not a .json file' });
      continue;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(f.text);
    } catch (e) {
      skipped.push({ path: f.path, why: `not JSON: ${e instanceof Error ? e.message : String(e)}` });
      continue;
    }
    const k = fileKind(f.path);
    if (k) {
      (bundle[k.slug] ??= []).push(doc);
      continue;
    }
    if (doc && typeof doc === 'object' && !Array.isArray(doc) && !('name' in doc)) {
      let any = false;
      for (const [key, list] of Object.entries(doc)) {
        if (kindBySlug(key) && Array.isArray(list)) {
          (bundle[key] ??= []).push(...(list as unknown[]));
          any = true;
        }
      }
      if (any) continue;
    }
    skipped.push({
      path: f.path,
      why: 'neither in a directory named after a kind (services/, providers/, ...) nor a bundle document',
    });
  }
  return { bundle, skipped };
}
