/* eslint-disable */
import * as types from './graphql';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "\n  query AdminEntity($kind: CatalogKind!, $name: String!, $version: Int) {\n    catalog {\n      entity(kind: $kind, name: $name, version: $version) {\n        kind\n        name\n        version\n        versions\n        document\n      }\n    }\n  }\n": typeof types.AdminEntityDocument,
    "\n  query AdminEntityList($kind: CatalogKind!) {\n    catalog {\n      entities(kind: $kind) {\n        name\n        version\n        versions\n        document\n      }\n    }\n  }\n": typeof types.AdminEntityListDocument,
    "\n  mutation AdminPutEntity($kind: CatalogKind!, $entity: JSON!) {\n    putCatalogEntity(kind: $kind, entity: $entity) {\n      entity {\n        kind\n        name\n        version\n        versions\n        document\n      }\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n": typeof types.AdminPutEntityDocument,
    "\n  mutation AdminDeleteEntity($kind: CatalogKind!, $name: String!, $version: Int) {\n    deleteCatalogEntity(kind: $kind, name: $name, version: $version)\n  }\n": typeof types.AdminDeleteEntityDocument,
    "\n  query SolveTemplate($template: JSON!, $size: Int!) {\n    solveTemplate(template: $template, size: $size) {\n      layout {\n        count\n        hardwaretype\n        imagetype\n        services\n      }\n      failure {\n        code\n        message\n        reasons\n      }\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n": typeof types.SolveTemplateDocument,
    "\n  mutation AdminImportCatalog($document: JSON!) {\n    importCatalog(document: $document) {\n      created\n      updated\n      unchanged\n      deleted\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n": typeof types.AdminImportCatalogDocument,
    "\n  subscription LiveCluster($id: ID!) {\n    clusterEvents(clusterId: $id) {\n      kind\n      seq\n      jobId\n      state\n      lagged\n      cluster {\n        id\n        status\n        latestJob {\n          id\n          action\n          state\n        }\n      }\n    }\n  }\n": typeof types.LiveClusterDocument,
    "\n  query AdminAgents {\n    agents {\n      id\n      version\n      host\n      capacity\n      registeredAt\n      lastSeen\n      slots {\n        tenantId\n        slots\n      }\n    }\n    tenants {\n      id\n      name\n    }\n  }\n": typeof types.AdminAgentsDocument,
    "\n  subscription AgentEvents {\n    agentEvents {\n      kind\n      agentId\n      capacity\n      busy\n      live\n      at\n      lagged\n    }\n  }\n": typeof types.AgentEventsDocument,
    "\n  query AdminResources($pluginType: PluginType!, $plugin: String!) {\n    resources(pluginType: $pluginType, plugin: $plugin) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      format\n      permissions\n      state\n      digest\n      size\n      createdAt\n    }\n  }\n": typeof types.AdminResourcesDocument,
    "\n  query AdminResourceGeneration {\n    resourceGeneration\n  }\n": typeof types.AdminResourceGenerationDocument,
    "\n  mutation AdminUploadResource($input: ResourceUploadInput!) {\n    uploadResource(input: $input) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      state\n    }\n  }\n": typeof types.AdminUploadResourceDocument,
    "\n  mutation AdminStageResource($input: ResourceVersionInput!) {\n    stageResource(input: $input) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      state\n    }\n  }\n": typeof types.AdminStageResourceDocument,
    "\n  mutation AdminRecallResource($input: ResourceVersionInput!) {\n    recallResource(input: $input) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      state\n    }\n  }\n": typeof types.AdminRecallResourceDocument,
    "\n  mutation AdminDeleteResource($input: ResourceVersionInput!) {\n    deleteResource(input: $input)\n  }\n": typeof types.AdminDeleteResourceDocument,
    "\n  mutation AdminSyncResources {\n    syncResources\n  }\n": typeof types.AdminSyncResourcesDocument,
    "\n  query AdminTenants {\n    tenants {\n      id\n      name\n      description\n      workers\n      maxClusters\n      maxNodes\n      createdAt\n    }\n  }\n": typeof types.AdminTenantsDocument,
    "\n  mutation AdminCreateTenant($input: TenantInput!, $bootstrap: Boolean) {\n    createTenant(input: $input, bootstrap: $bootstrap) {\n      id\n      name\n      description\n      workers\n      maxClusters\n      maxNodes\n      createdAt\n    }\n  }\n": typeof types.AdminCreateTenantDocument,
    "\n  mutation AdminUpdateTenant($name: String!, $input: TenantInput!) {\n    updateTenant(name: $name, input: $input) {\n      id\n      name\n      description\n      workers\n      maxClusters\n      maxNodes\n      createdAt\n    }\n  }\n": typeof types.AdminUpdateTenantDocument,
    "\n  mutation AdminDeleteTenant($name: String!) {\n    deleteTenant(name: $name)\n  }\n": typeof types.AdminDeleteTenantDocument,
    "\n  query AdminUsers {\n    users {\n      name\n      role\n      createdAt\n    }\n    apiTokens {\n      id\n      name\n      kind\n      user\n      createdAt\n      lastUsedAt\n      revokedAt\n    }\n  }\n": typeof types.AdminUsersDocument,
    "\n  mutation AdminCreateUser($name: String!, $role: Role!) {\n    createUser(name: $name, role: $role) {\n      name\n      role\n      createdAt\n    }\n  }\n": typeof types.AdminCreateUserDocument,
    "\n  mutation AdminCreateToken($input: APITokenInput!) {\n    createAPIToken(input: $input) {\n      token {\n        id\n        name\n        kind\n        user\n        createdAt\n        lastUsedAt\n        revokedAt\n      }\n      secret\n    }\n  }\n": typeof types.AdminCreateTokenDocument,
    "\n  mutation AdminRevokeToken($id: ID!) {\n    revokeAPIToken(id: $id)\n  }\n": typeof types.AdminRevokeTokenDocument,
    "\n  query TemplateGallery {\n    catalog {\n      templates: entities(kind: CLUSTERTEMPLATES) {\n        name\n        version\n        document\n      }\n      services: entities(kind: SERVICES) {\n        name\n        document\n      }\n    }\n  }\n": typeof types.TemplateGalleryDocument,
    "\n  query ClusterSummary($id: ID!) {\n    cluster(id: $id) {\n      id\n      name\n      description\n      owner\n      status\n      message\n      template\n      provider\n      services\n      size\n      dnsSuffix\n      expireTime\n      createdAt\n      updatedAt\n      nodes {\n        id\n      }\n      latestJob {\n        id\n        action\n        state\n        message\n      }\n    }\n  }\n": typeof types.ClusterSummaryDocument,
    "\n  query ClusterList($first: Int!, $after: String, $status: [ClusterStatus!], $template: String) {\n    clusters(first: $first, after: $after, status: $status, template: $template) {\n      nodes {\n        id\n        name\n        status\n        template\n        owner\n        size\n        expireTime\n        createdAt\n        latestJob {\n          id\n          action\n          state\n        }\n      }\n      endCursor\n      hasNextPage\n    }\n  }\n": typeof types.ClusterListDocument,
    "\n  query TemplateNames {\n    catalog {\n      entities(kind: CLUSTERTEMPLATES) {\n        name\n      }\n    }\n  }\n": typeof types.TemplateNamesDocument,
};
const documents: Documents = {
    "\n  query AdminEntity($kind: CatalogKind!, $name: String!, $version: Int) {\n    catalog {\n      entity(kind: $kind, name: $name, version: $version) {\n        kind\n        name\n        version\n        versions\n        document\n      }\n    }\n  }\n": types.AdminEntityDocument,
    "\n  query AdminEntityList($kind: CatalogKind!) {\n    catalog {\n      entities(kind: $kind) {\n        name\n        version\n        versions\n        document\n      }\n    }\n  }\n": types.AdminEntityListDocument,
    "\n  mutation AdminPutEntity($kind: CatalogKind!, $entity: JSON!) {\n    putCatalogEntity(kind: $kind, entity: $entity) {\n      entity {\n        kind\n        name\n        version\n        versions\n        document\n      }\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n": types.AdminPutEntityDocument,
    "\n  mutation AdminDeleteEntity($kind: CatalogKind!, $name: String!, $version: Int) {\n    deleteCatalogEntity(kind: $kind, name: $name, version: $version)\n  }\n": types.AdminDeleteEntityDocument,
    "\n  query SolveTemplate($template: JSON!, $size: Int!) {\n    solveTemplate(template: $template, size: $size) {\n      layout {\n        count\n        hardwaretype\n        imagetype\n        services\n      }\n      failure {\n        code\n        message\n        reasons\n      }\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n": types.SolveTemplateDocument,
    "\n  mutation AdminImportCatalog($document: JSON!) {\n    importCatalog(document: $document) {\n      created\n      updated\n      unchanged\n      deleted\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n": types.AdminImportCatalogDocument,
    "\n  subscription LiveCluster($id: ID!) {\n    clusterEvents(clusterId: $id) {\n      kind\n      seq\n      jobId\n      state\n      lagged\n      cluster {\n        id\n        status\n        latestJob {\n          id\n          action\n          state\n        }\n      }\n    }\n  }\n": types.LiveClusterDocument,
    "\n  query AdminAgents {\n    agents {\n      id\n      version\n      host\n      capacity\n      registeredAt\n      lastSeen\n      slots {\n        tenantId\n        slots\n      }\n    }\n    tenants {\n      id\n      name\n    }\n  }\n": types.AdminAgentsDocument,
    "\n  subscription AgentEvents {\n    agentEvents {\n      kind\n      agentId\n      capacity\n      busy\n      live\n      at\n      lagged\n    }\n  }\n": types.AgentEventsDocument,
    "\n  query AdminResources($pluginType: PluginType!, $plugin: String!) {\n    resources(pluginType: $pluginType, plugin: $plugin) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      format\n      permissions\n      state\n      digest\n      size\n      createdAt\n    }\n  }\n": types.AdminResourcesDocument,
    "\n  query AdminResourceGeneration {\n    resourceGeneration\n  }\n": types.AdminResourceGenerationDocument,
    "\n  mutation AdminUploadResource($input: ResourceUploadInput!) {\n    uploadResource(input: $input) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      state\n    }\n  }\n": types.AdminUploadResourceDocument,
    "\n  mutation AdminStageResource($input: ResourceVersionInput!) {\n    stageResource(input: $input) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      state\n    }\n  }\n": types.AdminStageResourceDocument,
    "\n  mutation AdminRecallResource($input: ResourceVersionInput!) {\n    recallResource(input: $input) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      state\n    }\n  }\n": types.AdminRecallResourceDocument,
    "\n  mutation AdminDeleteResource($input: ResourceVersionInput!) {\n    deleteResource(input: $input)\n  }\n": types.AdminDeleteResourceDocument,
    "\n  mutation AdminSyncResources {\n    syncResources\n  }\n": types.AdminSyncResourcesDocument,
    "\n  query AdminTenants {\n    tenants {\n      id\n      name\n      description\n      workers\n      maxClusters\n      maxNodes\n      createdAt\n    }\n  }\n": types.AdminTenantsDocument,
    "\n  mutation AdminCreateTenant($input: TenantInput!, $bootstrap: Boolean) {\n    createTenant(input: $input, bootstrap: $bootstrap) {\n      id\n      name\n      description\n      workers\n      maxClusters\n      maxNodes\n      createdAt\n    }\n  }\n": types.AdminCreateTenantDocument,
    "\n  mutation AdminUpdateTenant($name: String!, $input: TenantInput!) {\n    updateTenant(name: $name, input: $input) {\n      id\n      name\n      description\n      workers\n      maxClusters\n      maxNodes\n      createdAt\n    }\n  }\n": types.AdminUpdateTenantDocument,
    "\n  mutation AdminDeleteTenant($name: String!) {\n    deleteTenant(name: $name)\n  }\n": types.AdminDeleteTenantDocument,
    "\n  query AdminUsers {\n    users {\n      name\n      role\n      createdAt\n    }\n    apiTokens {\n      id\n      name\n      kind\n      user\n      createdAt\n      lastUsedAt\n      revokedAt\n    }\n  }\n": types.AdminUsersDocument,
    "\n  mutation AdminCreateUser($name: String!, $role: Role!) {\n    createUser(name: $name, role: $role) {\n      name\n      role\n      createdAt\n    }\n  }\n": types.AdminCreateUserDocument,
    "\n  mutation AdminCreateToken($input: APITokenInput!) {\n    createAPIToken(input: $input) {\n      token {\n        id\n        name\n        kind\n        user\n        createdAt\n        lastUsedAt\n        revokedAt\n      }\n      secret\n    }\n  }\n": types.AdminCreateTokenDocument,
    "\n  mutation AdminRevokeToken($id: ID!) {\n    revokeAPIToken(id: $id)\n  }\n": types.AdminRevokeTokenDocument,
    "\n  query TemplateGallery {\n    catalog {\n      templates: entities(kind: CLUSTERTEMPLATES) {\n        name\n        version\n        document\n      }\n      services: entities(kind: SERVICES) {\n        name\n        document\n      }\n    }\n  }\n": types.TemplateGalleryDocument,
    "\n  query ClusterSummary($id: ID!) {\n    cluster(id: $id) {\n      id\n      name\n      description\n      owner\n      status\n      message\n      template\n      provider\n      services\n      size\n      dnsSuffix\n      expireTime\n      createdAt\n      updatedAt\n      nodes {\n        id\n      }\n      latestJob {\n        id\n        action\n        state\n        message\n      }\n    }\n  }\n": types.ClusterSummaryDocument,
    "\n  query ClusterList($first: Int!, $after: String, $status: [ClusterStatus!], $template: String) {\n    clusters(first: $first, after: $after, status: $status, template: $template) {\n      nodes {\n        id\n        name\n        status\n        template\n        owner\n        size\n        expireTime\n        createdAt\n        latestJob {\n          id\n          action\n          state\n        }\n      }\n      endCursor\n      hasNextPage\n    }\n  }\n": types.ClusterListDocument,
    "\n  query TemplateNames {\n    catalog {\n      entities(kind: CLUSTERTEMPLATES) {\n        name\n      }\n    }\n  }\n": types.TemplateNamesDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query AdminEntity($kind: CatalogKind!, $name: String!, $version: Int) {\n    catalog {\n      entity(kind: $kind, name: $name, version: $version) {\n        kind\n        name\n        version\n        versions\n        document\n      }\n    }\n  }\n"): (typeof documents)["\n  query AdminEntity($kind: CatalogKind!, $name: String!, $version: Int) {\n    catalog {\n      entity(kind: $kind, name: $name, version: $version) {\n        kind\n        name\n        version\n        versions\n        document\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query AdminEntityList($kind: CatalogKind!) {\n    catalog {\n      entities(kind: $kind) {\n        name\n        version\n        versions\n        document\n      }\n    }\n  }\n"): (typeof documents)["\n  query AdminEntityList($kind: CatalogKind!) {\n    catalog {\n      entities(kind: $kind) {\n        name\n        version\n        versions\n        document\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminPutEntity($kind: CatalogKind!, $entity: JSON!) {\n    putCatalogEntity(kind: $kind, entity: $entity) {\n      entity {\n        kind\n        name\n        version\n        versions\n        document\n      }\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation AdminPutEntity($kind: CatalogKind!, $entity: JSON!) {\n    putCatalogEntity(kind: $kind, entity: $entity) {\n      entity {\n        kind\n        name\n        version\n        versions\n        document\n      }\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminDeleteEntity($kind: CatalogKind!, $name: String!, $version: Int) {\n    deleteCatalogEntity(kind: $kind, name: $name, version: $version)\n  }\n"): (typeof documents)["\n  mutation AdminDeleteEntity($kind: CatalogKind!, $name: String!, $version: Int) {\n    deleteCatalogEntity(kind: $kind, name: $name, version: $version)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query SolveTemplate($template: JSON!, $size: Int!) {\n    solveTemplate(template: $template, size: $size) {\n      layout {\n        count\n        hardwaretype\n        imagetype\n        services\n      }\n      failure {\n        code\n        message\n        reasons\n      }\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n"): (typeof documents)["\n  query SolveTemplate($template: JSON!, $size: Int!) {\n    solveTemplate(template: $template, size: $size) {\n      layout {\n        count\n        hardwaretype\n        imagetype\n        services\n      }\n      failure {\n        code\n        message\n        reasons\n      }\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminImportCatalog($document: JSON!) {\n    importCatalog(document: $document) {\n      created\n      updated\n      unchanged\n      deleted\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation AdminImportCatalog($document: JSON!) {\n    importCatalog(document: $document) {\n      created\n      updated\n      unchanged\n      deleted\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription LiveCluster($id: ID!) {\n    clusterEvents(clusterId: $id) {\n      kind\n      seq\n      jobId\n      state\n      lagged\n      cluster {\n        id\n        status\n        latestJob {\n          id\n          action\n          state\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  subscription LiveCluster($id: ID!) {\n    clusterEvents(clusterId: $id) {\n      kind\n      seq\n      jobId\n      state\n      lagged\n      cluster {\n        id\n        status\n        latestJob {\n          id\n          action\n          state\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query AdminAgents {\n    agents {\n      id\n      version\n      host\n      capacity\n      registeredAt\n      lastSeen\n      slots {\n        tenantId\n        slots\n      }\n    }\n    tenants {\n      id\n      name\n    }\n  }\n"): (typeof documents)["\n  query AdminAgents {\n    agents {\n      id\n      version\n      host\n      capacity\n      registeredAt\n      lastSeen\n      slots {\n        tenantId\n        slots\n      }\n    }\n    tenants {\n      id\n      name\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription AgentEvents {\n    agentEvents {\n      kind\n      agentId\n      capacity\n      busy\n      live\n      at\n      lagged\n    }\n  }\n"): (typeof documents)["\n  subscription AgentEvents {\n    agentEvents {\n      kind\n      agentId\n      capacity\n      busy\n      live\n      at\n      lagged\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query AdminResources($pluginType: PluginType!, $plugin: String!) {\n    resources(pluginType: $pluginType, plugin: $plugin) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      format\n      permissions\n      state\n      digest\n      size\n      createdAt\n    }\n  }\n"): (typeof documents)["\n  query AdminResources($pluginType: PluginType!, $plugin: String!) {\n    resources(pluginType: $pluginType, plugin: $plugin) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      format\n      permissions\n      state\n      digest\n      size\n      createdAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query AdminResourceGeneration {\n    resourceGeneration\n  }\n"): (typeof documents)["\n  query AdminResourceGeneration {\n    resourceGeneration\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminUploadResource($input: ResourceUploadInput!) {\n    uploadResource(input: $input) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      state\n    }\n  }\n"): (typeof documents)["\n  mutation AdminUploadResource($input: ResourceUploadInput!) {\n    uploadResource(input: $input) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      state\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminStageResource($input: ResourceVersionInput!) {\n    stageResource(input: $input) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      state\n    }\n  }\n"): (typeof documents)["\n  mutation AdminStageResource($input: ResourceVersionInput!) {\n    stageResource(input: $input) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      state\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminRecallResource($input: ResourceVersionInput!) {\n    recallResource(input: $input) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      state\n    }\n  }\n"): (typeof documents)["\n  mutation AdminRecallResource($input: ResourceVersionInput!) {\n    recallResource(input: $input) {\n      pluginType\n      plugin\n      resourceType\n      name\n      version\n      state\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminDeleteResource($input: ResourceVersionInput!) {\n    deleteResource(input: $input)\n  }\n"): (typeof documents)["\n  mutation AdminDeleteResource($input: ResourceVersionInput!) {\n    deleteResource(input: $input)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminSyncResources {\n    syncResources\n  }\n"): (typeof documents)["\n  mutation AdminSyncResources {\n    syncResources\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query AdminTenants {\n    tenants {\n      id\n      name\n      description\n      workers\n      maxClusters\n      maxNodes\n      createdAt\n    }\n  }\n"): (typeof documents)["\n  query AdminTenants {\n    tenants {\n      id\n      name\n      description\n      workers\n      maxClusters\n      maxNodes\n      createdAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminCreateTenant($input: TenantInput!, $bootstrap: Boolean) {\n    createTenant(input: $input, bootstrap: $bootstrap) {\n      id\n      name\n      description\n      workers\n      maxClusters\n      maxNodes\n      createdAt\n    }\n  }\n"): (typeof documents)["\n  mutation AdminCreateTenant($input: TenantInput!, $bootstrap: Boolean) {\n    createTenant(input: $input, bootstrap: $bootstrap) {\n      id\n      name\n      description\n      workers\n      maxClusters\n      maxNodes\n      createdAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminUpdateTenant($name: String!, $input: TenantInput!) {\n    updateTenant(name: $name, input: $input) {\n      id\n      name\n      description\n      workers\n      maxClusters\n      maxNodes\n      createdAt\n    }\n  }\n"): (typeof documents)["\n  mutation AdminUpdateTenant($name: String!, $input: TenantInput!) {\n    updateTenant(name: $name, input: $input) {\n      id\n      name\n      description\n      workers\n      maxClusters\n      maxNodes\n      createdAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminDeleteTenant($name: String!) {\n    deleteTenant(name: $name)\n  }\n"): (typeof documents)["\n  mutation AdminDeleteTenant($name: String!) {\n    deleteTenant(name: $name)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query AdminUsers {\n    users {\n      name\n      role\n      createdAt\n    }\n    apiTokens {\n      id\n      name\n      kind\n      user\n      createdAt\n      lastUsedAt\n      revokedAt\n    }\n  }\n"): (typeof documents)["\n  query AdminUsers {\n    users {\n      name\n      role\n      createdAt\n    }\n    apiTokens {\n      id\n      name\n      kind\n      user\n      createdAt\n      lastUsedAt\n      revokedAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminCreateUser($name: String!, $role: Role!) {\n    createUser(name: $name, role: $role) {\n      name\n      role\n      createdAt\n    }\n  }\n"): (typeof documents)["\n  mutation AdminCreateUser($name: String!, $role: Role!) {\n    createUser(name: $name, role: $role) {\n      name\n      role\n      createdAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminCreateToken($input: APITokenInput!) {\n    createAPIToken(input: $input) {\n      token {\n        id\n        name\n        kind\n        user\n        createdAt\n        lastUsedAt\n        revokedAt\n      }\n      secret\n    }\n  }\n"): (typeof documents)["\n  mutation AdminCreateToken($input: APITokenInput!) {\n    createAPIToken(input: $input) {\n      token {\n        id\n        name\n        kind\n        user\n        createdAt\n        lastUsedAt\n        revokedAt\n      }\n      secret\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminRevokeToken($id: ID!) {\n    revokeAPIToken(id: $id)\n  }\n"): (typeof documents)["\n  mutation AdminRevokeToken($id: ID!) {\n    revokeAPIToken(id: $id)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query TemplateGallery {\n    catalog {\n      templates: entities(kind: CLUSTERTEMPLATES) {\n        name\n        version\n        document\n      }\n      services: entities(kind: SERVICES) {\n        name\n        document\n      }\n    }\n  }\n"): (typeof documents)["\n  query TemplateGallery {\n    catalog {\n      templates: entities(kind: CLUSTERTEMPLATES) {\n        name\n        version\n        document\n      }\n      services: entities(kind: SERVICES) {\n        name\n        document\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ClusterSummary($id: ID!) {\n    cluster(id: $id) {\n      id\n      name\n      description\n      owner\n      status\n      message\n      template\n      provider\n      services\n      size\n      dnsSuffix\n      expireTime\n      createdAt\n      updatedAt\n      nodes {\n        id\n      }\n      latestJob {\n        id\n        action\n        state\n        message\n      }\n    }\n  }\n"): (typeof documents)["\n  query ClusterSummary($id: ID!) {\n    cluster(id: $id) {\n      id\n      name\n      description\n      owner\n      status\n      message\n      template\n      provider\n      services\n      size\n      dnsSuffix\n      expireTime\n      createdAt\n      updatedAt\n      nodes {\n        id\n      }\n      latestJob {\n        id\n        action\n        state\n        message\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ClusterList($first: Int!, $after: String, $status: [ClusterStatus!], $template: String) {\n    clusters(first: $first, after: $after, status: $status, template: $template) {\n      nodes {\n        id\n        name\n        status\n        template\n        owner\n        size\n        expireTime\n        createdAt\n        latestJob {\n          id\n          action\n          state\n        }\n      }\n      endCursor\n      hasNextPage\n    }\n  }\n"): (typeof documents)["\n  query ClusterList($first: Int!, $after: String, $status: [ClusterStatus!], $template: String) {\n    clusters(first: $first, after: $after, status: $status, template: $template) {\n      nodes {\n        id\n        name\n        status\n        template\n        owner\n        size\n        expireTime\n        createdAt\n        latestJob {\n          id\n          action\n          state\n        }\n      }\n      endCursor\n      hasNextPage\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query TemplateNames {\n    catalog {\n      entities(kind: CLUSTERTEMPLATES) {\n        name\n      }\n    }\n  }\n"): (typeof documents)["\n  query TemplateNames {\n    catalog {\n      entities(kind: CLUSTERTEMPLATES) {\n        name\n      }\n    }\n  }\n"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;