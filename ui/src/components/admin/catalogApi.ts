// The catalog operations the admin views share.
import { graphql } from '../../gql';

export const EntityDocument = graphql(`
  query AdminEntity($kind: CatalogKind!, $name: String!, $version: Int) {
    catalog {
      entity(kind: $kind, name: $name, version: $version) {
        kind
        name
        version
        versions
        document
      }
    }
  }
`);

/** EntityListDocument: every entity of a kind with its newest document (for lists, selects and editors' options). */
export const EntityListDocument = graphql(`
  query AdminEntityList($kind: CatalogKind!) {
    catalog {
      entities(kind: $kind) {
        name
        version
        versions
        document
      }
    }
  }
`);

export const PutEntityDocument = graphql(`
  mutation AdminPutEntity($kind: CatalogKind!, $entity: JSON!) {
    putCatalogEntity(kind: $kind, entity: $entity) {
      entity {
        kind
        name
        version
        versions
        document
      }
      warnings {
        path
        message
        severity
      }
    }
  }
`);

export const DeleteEntityDocument = graphql(`
  mutation AdminDeleteEntity($kind: CatalogKind!, $name: String!, $version: Int) {
    deleteCatalogEntity(kind: $kind, name: $name, version: $version)
  }
`);

export const SolveTemplateDocument = graphql(`
  query SolveTemplate($template: JSON!, $size: Int!) {
    solveTemplate(template: $template, size: $size) {
      layout {
        count
        hardwaretype
        imagetype
        services
      }
      failure {
        code
        message
        reasons
      }
      warnings {
        path
        message
        severity
      }
    }
  }
`);

export const ImportCatalogDocument = graphql(`
  mutation AdminImportCatalog($document: JSON!) {
    importCatalog(document: $document) {
      created
      updated
      unchanged
      deleted
      warnings {
        path
        message
        severity
      }
    }
  }
`);

/**
 * catalogChanged is the context of a mutation whose answer carries no
 * catalog entity (a delete, an import): urql's cache then drops every
 * query that read one, and views show the catalog as it now is.
 */
export const catalogChanged = { additionalTypenames: ['CatalogEntity'] };
