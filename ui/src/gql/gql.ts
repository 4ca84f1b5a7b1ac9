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
    "\n  query ClusterTemplate($name: String!) {\n    catalog {\n      entity(kind: CLUSTERTEMPLATES, name: $name) {\n        name\n        document\n      }\n    }\n  }\n": typeof types.ClusterTemplateDocument,
    "\n  mutation SetClusterExpireTime($id: ID!, $t: Time!) {\n    setClusterExpireTime(id: $id, expireTime: $t) {\n      id\n      expireTime\n    }\n  }\n": typeof types.SetClusterExpireTimeDocument,
    "\n  mutation PreviewOperation($id: ID!, $input: OperationInput!) {\n    previewOperation(clusterId: $id, input: $input) {\n      action\n      added {\n        nodenum\n        hostname\n        services\n        hardwaretype\n        imagetype\n        flavor\n        image\n      }\n      removed\n      changed {\n        nodenum\n        add\n      }\n      configChanges {\n        path\n        kind\n        old\n        new\n      }\n      capacity {\n        provider\n        pool\n        nodes\n        used\n        free\n        requested\n      }\n      tasks {\n        ref\n        nodenum\n        action\n        service\n        stage\n      }\n      edges\n      planHash\n      sync {\n        fromVersion\n        toVersion\n        addServices\n        keptServices\n        constraintChanges {\n          path\n          old\n          new\n        }\n      }\n    }\n  }\n": typeof types.PreviewOperationDocument,
    "\n  mutation RunOperation($id: ID!, $input: OperationInput!, $hash: String) {\n    runOperation(clusterId: $id, input: $input, expectedPlanHash: $hash) {\n      id\n    }\n  }\n": typeof types.RunOperationDocument,
    "\n  mutation DeleteCluster($id: ID!) {\n    deleteCluster(id: $id) {\n      id\n    }\n  }\n": typeof types.DeleteClusterDocument,
    "\n  subscription ClusterChanges {\n    clusterChanges {\n      kind\n      clusterId\n      state\n      lagged\n    }\n  }\n": typeof types.ClusterChangesDocument,
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
    "\n  query AdminUsers {\n    users {\n      name\n      role\n      createdAt\n    }\n    me {\n      tenant {\n        id\n        adminSSHKeys\n      }\n    }\n    apiTokens {\n      id\n      name\n      kind\n      user\n      createdAt\n      lastUsedAt\n      revokedAt\n    }\n  }\n": typeof types.AdminUsersDocument,
    "\n  mutation AdminSetTenantAdminSSHKeys($enabled: Boolean!) {\n    setTenantAdminSSHKeys(enabled: $enabled) {\n      id\n      adminSSHKeys\n    }\n  }\n": typeof types.AdminSetTenantAdminSshKeysDocument,
    "\n  mutation AdminCreateUser($name: String!, $role: Role!) {\n    createUser(name: $name, role: $role) {\n      name\n      role\n      createdAt\n    }\n  }\n": typeof types.AdminCreateUserDocument,
    "\n  mutation AdminCreateToken($input: APITokenInput!) {\n    createAPIToken(input: $input) {\n      token {\n        id\n        name\n        kind\n        user\n        createdAt\n        lastUsedAt\n        revokedAt\n      }\n      secret\n    }\n  }\n": typeof types.AdminCreateTokenDocument,
    "\n  mutation AdminRevokeToken($id: ID!) {\n    revokeAPIToken(id: $id)\n  }\n": typeof types.AdminRevokeTokenDocument,
    "\n  query TemplateGallery {\n    catalog {\n      templates: entities(kind: CLUSTERTEMPLATES) {\n        name\n        version\n        document\n      }\n      services: entities(kind: SERVICES) {\n        name\n        document\n      }\n    }\n  }\n": typeof types.TemplateGalleryDocument,
    "\n  query ClusterSummary($id: ID!) {\n    cluster(id: $id) {\n      id\n      name\n      description\n      owner\n      status\n      message\n      template\n      provider\n      services\n      size\n      dnsSuffix\n      expireTime\n      createdAt\n      updatedAt\n      config\n      nodes {\n        id\n        nodenum\n        hostname\n        ipaddresses\n        hardwaretype\n        imagetype\n        flavor\n        image\n        services\n        state\n        stateReason\n        sshCommand\n        hostKeys {\n          type\n          fingerprint\n        }\n        serviceStates {\n          service\n          state\n          action\n          message\n        }\n      }\n      serviceSummary {\n        service\n        nodes\n        states {\n          state\n          count\n        }\n        summary\n      }\n      latestJob {\n        id\n        action\n        state\n        message\n      }\n      lastCheck {\n        at\n        jobId\n        healthy\n        nodes {\n          nodeId\n          nodenum\n          hostname\n          reachable\n          findings {\n            kind\n            service\n            detail\n          }\n          unchecked\n        }\n      }\n      jobs {\n        id\n        action\n        state\n        message\n        createdAt\n        updatedAt\n        counts {\n          total\n          complete\n          failed\n          skipped\n        }\n      }\n    }\n  }\n": typeof types.ClusterSummaryDocument,
    "\n  query ClusterList($first: Int!, $after: String, $status: [ClusterStatus!], $template: String) {\n    clusters(first: $first, after: $after, status: $status, template: $template) {\n      nodes {\n        id\n        name\n        status\n        template\n        owner\n        size\n        expireTime\n        createdAt\n        latestJob {\n          id\n          action\n          state\n        }\n      }\n      endCursor\n      hasNextPage\n    }\n  }\n": typeof types.ClusterListDocument,
    "\n  query TemplateNames {\n    catalog {\n      entities(kind: CLUSTERTEMPLATES) {\n        name\n      }\n    }\n  }\n": typeof types.TemplateNamesDocument,
    "\n  query CreateCatalog {\n    catalog {\n      templates: entities(kind: CLUSTERTEMPLATES) {\n        name\n        document\n      }\n      providers: entities(kind: PROVIDERS) {\n        name\n        document\n      }\n      providerTypes: entities(kind: PROVIDERTYPES) {\n        name\n        document\n      }\n    }\n  }\n": typeof types.CreateCatalogDocument,
    "\n  mutation PreviewCluster($input: ClusterInput!) {\n    previewCluster(input: $input) {\n      template\n      provider\n      services\n      nodes {\n        nodenum\n        hostname\n        services\n        hardwaretype\n        imagetype\n        flavor\n        image\n      }\n      tasks {\n        ref\n        nodenum\n        action\n        service\n        stage\n      }\n      edges\n      planHash\n      warnings\n      capacity {\n        provider\n        pool\n        nodes\n        used\n        free\n        requested\n      }\n      quota {\n        maxClusters\n        maxNodes\n        clusters\n        nodes\n        addClusters\n        addNodes\n      }\n    }\n  }\n": typeof types.PreviewClusterDocument,
    "\n  mutation CreateCluster($input: ClusterInput!, $hash: String) {\n    createCluster(input: $input, expectedPlanHash: $hash) {\n      id\n      latestJob {\n        id\n      }\n    }\n  }\n": typeof types.CreateClusterDocument,
    "\n  query JobDetail($id: ID!) {\n    job(id: $id) {\n      id\n      clusterId\n      action\n      state\n      message\n      planHash\n      createdAt\n      updatedAt\n      counts {\n        total\n      }\n    }\n  }\n": typeof types.JobDetailDocument,
    "\n  query JobTasksPage($id: ID!, $first: Int!, $after: ID) {\n    job(id: $id) {\n      id\n      tasks(first: $first, after: $after) {\n        id\n        nodeId\n        hostname\n        action\n        service\n        stage\n        state\n        attempt\n        failures\n        maxAttempts\n        message\n      }\n    }\n  }\n": typeof types.JobTasksPageDocument,
    "\n  subscription JobProgressLive($id: ID!) {\n    jobProgress(jobId: $id) {\n      kind\n      taskId\n      state\n      message\n      lagged\n      jobState\n      done\n      failed\n      total\n    }\n  }\n": typeof types.JobProgressLiveDocument,
    "\n  query TaskAttempts($id: ID!, $task: ID!) {\n    job(id: $id) {\n      id\n      task(id: $task) {\n        id\n        attempts {\n          attempt\n          agent\n          claimedAt\n          finishedAt\n          status\n          message\n          retryable\n          stdoutTail\n          stderrTail\n        }\n      }\n    }\n  }\n": typeof types.TaskAttemptsDocument,
    "\n  subscription TaskLogLive($id: ID!) {\n    taskLog(taskId: $id) {\n      attempt\n      seq\n      stream\n      chunk\n      lagged\n    }\n  }\n": typeof types.TaskLogLiveDocument,
    "\n  mutation PauseJob($id: ID!) {\n    pauseJob(id: $id) {\n      id\n      state\n    }\n  }\n": typeof types.PauseJobDocument,
    "\n  mutation ResumeJob($id: ID!) {\n    resumeJob(id: $id) {\n      id\n      state\n    }\n  }\n": typeof types.ResumeJobDocument,
    "\n  mutation AbortJob($id: ID!) {\n    abortJob(id: $id) {\n      id\n      state\n    }\n  }\n": typeof types.AbortJobDocument,
    "\n  mutation RetryJob($id: ID!) {\n    retryJob(id: $id) {\n      id\n      state\n    }\n  }\n": typeof types.RetryJobDocument,
    "\n  query MySSHKeys {\n    me {\n      sshKeys {\n        id\n        name\n        type\n        fingerprint\n        createdAt\n      }\n    }\n  }\n": typeof types.MySshKeysDocument,
    "\n  mutation AddSSHKey($publicKey: String!, $name: String) {\n    addSSHKey(publicKey: $publicKey, name: $name) {\n      id\n    }\n  }\n": typeof types.AddSshKeyDocument,
    "\n  mutation RemoveSSHKey($id: ID!) {\n    removeSSHKey(id: $id)\n  }\n": typeof types.RemoveSshKeyDocument,
    "\n  query MyLiveClusters {\n    clusters(first: 200, status: [ACTIVE, INCONSISTENT]) {\n      nodes {\n        id\n        owner\n      }\n      hasNextPage\n    }\n  }\n": typeof types.MyLiveClustersDocument,
};
const documents: Documents = {
    "\n  query AdminEntity($kind: CatalogKind!, $name: String!, $version: Int) {\n    catalog {\n      entity(kind: $kind, name: $name, version: $version) {\n        kind\n        name\n        version\n        versions\n        document\n      }\n    }\n  }\n": types.AdminEntityDocument,
    "\n  query AdminEntityList($kind: CatalogKind!) {\n    catalog {\n      entities(kind: $kind) {\n        name\n        version\n        versions\n        document\n      }\n    }\n  }\n": types.AdminEntityListDocument,
    "\n  mutation AdminPutEntity($kind: CatalogKind!, $entity: JSON!) {\n    putCatalogEntity(kind: $kind, entity: $entity) {\n      entity {\n        kind\n        name\n        version\n        versions\n        document\n      }\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n": types.AdminPutEntityDocument,
    "\n  mutation AdminDeleteEntity($kind: CatalogKind!, $name: String!, $version: Int) {\n    deleteCatalogEntity(kind: $kind, name: $name, version: $version)\n  }\n": types.AdminDeleteEntityDocument,
    "\n  query SolveTemplate($template: JSON!, $size: Int!) {\n    solveTemplate(template: $template, size: $size) {\n      layout {\n        count\n        hardwaretype\n        imagetype\n        services\n      }\n      failure {\n        code\n        message\n        reasons\n      }\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n": types.SolveTemplateDocument,
    "\n  mutation AdminImportCatalog($document: JSON!) {\n    importCatalog(document: $document) {\n      created\n      updated\n      unchanged\n      deleted\n      warnings {\n        path\n        message\n        severity\n      }\n    }\n  }\n": types.AdminImportCatalogDocument,
    "\n  query ClusterTemplate($name: String!) {\n    catalog {\n      entity(kind: CLUSTERTEMPLATES, name: $name) {\n        name\n        document\n      }\n    }\n  }\n": types.ClusterTemplateDocument,
    "\n  mutation SetClusterExpireTime($id: ID!, $t: Time!) {\n    setClusterExpireTime(id: $id, expireTime: $t) {\n      id\n      expireTime\n    }\n  }\n": types.SetClusterExpireTimeDocument,
    "\n  mutation PreviewOperation($id: ID!, $input: OperationInput!) {\n    previewOperation(clusterId: $id, input: $input) {\n      action\n      added {\n        nodenum\n        hostname\n        services\n        hardwaretype\n        imagetype\n        flavor\n        image\n      }\n      removed\n      changed {\n        nodenum\n        add\n      }\n      configChanges {\n        path\n        kind\n        old\n        new\n      }\n      capacity {\n        provider\n        pool\n        nodes\n        used\n        free\n        requested\n      }\n      tasks {\n        ref\n        nodenum\n        action\n        service\n        stage\n      }\n      edges\n      planHash\n      sync {\n        fromVersion\n        toVersion\n        addServices\n        keptServices\n        constraintChanges {\n          path\n          old\n          new\n        }\n      }\n    }\n  }\n": types.PreviewOperationDocument,
    "\n  mutation RunOperation($id: ID!, $input: OperationInput!, $hash: String) {\n    runOperation(clusterId: $id, input: $input, expectedPlanHash: $hash) {\n      id\n    }\n  }\n": types.RunOperationDocument,
    "\n  mutation DeleteCluster($id: ID!) {\n    deleteCluster(id: $id) {\n      id\n    }\n  }\n": types.DeleteClusterDocument,
    "\n  subscription ClusterChanges {\n    clusterChanges {\n      kind\n      clusterId\n      state\n      lagged\n    }\n  }\n": types.ClusterChangesDocument,
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
    "\n  query AdminUsers {\n    users {\n      name\n      role\n      createdAt\n    }\n    me {\n      tenant {\n        id\n        adminSSHKeys\n      }\n    }\n    apiTokens {\n      id\n      name\n      kind\n      user\n      createdAt\n      lastUsedAt\n      revokedAt\n    }\n  }\n": types.AdminUsersDocument,
    "\n  mutation AdminSetTenantAdminSSHKeys($enabled: Boolean!) {\n    setTenantAdminSSHKeys(enabled: $enabled) {\n      id\n      adminSSHKeys\n    }\n  }\n": types.AdminSetTenantAdminSshKeysDocument,
    "\n  mutation AdminCreateUser($name: String!, $role: Role!) {\n    createUser(name: $name, role: $role) {\n      name\n      role\n      createdAt\n    }\n  }\n": types.AdminCreateUserDocument,
    "\n  mutation AdminCreateToken($input: APITokenInput!) {\n    createAPIToken(input: $input) {\n      token {\n        id\n        name\n        kind\n        user\n        createdAt\n        lastUsedAt\n        revokedAt\n      }\n      secret\n    }\n  }\n": types.AdminCreateTokenDocument,
    "\n  mutation AdminRevokeToken($id: ID!) {\n    revokeAPIToken(id: $id)\n  }\n": types.AdminRevokeTokenDocument,
    "\n  query TemplateGallery {\n    catalog {\n      templates: entities(kind: CLUSTERTEMPLATES) {\n        name\n        version\n        document\n      }\n      services: entities(kind: SERVICES) {\n        name\n        document\n      }\n    }\n  }\n": types.TemplateGalleryDocument,
    "\n  query ClusterSummary($id: ID!) {\n    cluster(id: $id) {\n      id\n      name\n      description\n      owner\n      status\n      message\n      template\n      provider\n      services\n      size\n      dnsSuffix\n      expireTime\n      createdAt\n      updatedAt\n      config\n      nodes {\n        id\n        nodenum\n        hostname\n        ipaddresses\n        hardwaretype\n        imagetype\n        flavor\n        image\n        services\n        state\n        stateReason\n        sshCommand\n        hostKeys {\n          type\n          fingerprint\n        }\n        serviceStates {\n          service\n          state\n          action\n          message\n        }\n      }\n      serviceSummary {\n        service\n        nodes\n        states {\n          state\n          count\n        }\n        summary\n      }\n      latestJob {\n        id\n        action\n        state\n        message\n      }\n      lastCheck {\n        at\n        jobId\n        healthy\n        nodes {\n          nodeId\n          nodenum\n          hostname\n          reachable\n          findings {\n            kind\n            service\n            detail\n          }\n          unchecked\n        }\n      }\n      jobs {\n        id\n        action\n        state\n        message\n        createdAt\n        updatedAt\n        counts {\n          total\n          complete\n          failed\n          skipped\n        }\n      }\n    }\n  }\n": types.ClusterSummaryDocument,
    "\n  query ClusterList($first: Int!, $after: String, $status: [ClusterStatus!], $template: String) {\n    clusters(first: $first, after: $after, status: $status, template: $template) {\n      nodes {\n        id\n        name\n        status\n        template\n        owner\n        size\n        expireTime\n        createdAt\n        latestJob {\n          id\n          action\n          state\n        }\n      }\n      endCursor\n      hasNextPage\n    }\n  }\n": types.ClusterListDocument,
    "\n  query TemplateNames {\n    catalog {\n      entities(kind: CLUSTERTEMPLATES) {\n        name\n      }\n    }\n  }\n": types.TemplateNamesDocument,
    "\n  query CreateCatalog {\n    catalog {\n      templates: entities(kind: CLUSTERTEMPLATES) {\n        name\n        document\n      }\n      providers: entities(kind: PROVIDERS) {\n        name\n        document\n      }\n      providerTypes: entities(kind: PROVIDERTYPES) {\n        name\n        document\n      }\n    }\n  }\n": types.CreateCatalogDocument,
    "\n  mutation PreviewCluster($input: ClusterInput!) {\n    previewCluster(input: $input) {\n      template\n      provider\n      services\n      nodes {\n        nodenum\n        hostname\n        services\n        hardwaretype\n        imagetype\n        flavor\n        image\n      }\n      tasks {\n        ref\n        nodenum\n        action\n        service\n        stage\n      }\n      edges\n      planHash\n      warnings\n      capacity {\n        provider\n        pool\n        nodes\n        used\n        free\n        requested\n      }\n      quota {\n        maxClusters\n        maxNodes\n        clusters\n        nodes\n        addClusters\n        addNodes\n      }\n    }\n  }\n": types.PreviewClusterDocument,
    "\n  mutation CreateCluster($input: ClusterInput!, $hash: String) {\n    createCluster(input: $input, expectedPlanHash: $hash) {\n      id\n      latestJob {\n        id\n      }\n    }\n  }\n": types.CreateClusterDocument,
    "\n  query JobDetail($id: ID!) {\n    job(id: $id) {\n      id\n      clusterId\n      action\n      state\n      message\n      planHash\n      createdAt\n      updatedAt\n      counts {\n        total\n      }\n    }\n  }\n": types.JobDetailDocument,
    "\n  query JobTasksPage($id: ID!, $first: Int!, $after: ID) {\n    job(id: $id) {\n      id\n      tasks(first: $first, after: $after) {\n        id\n        nodeId\n        hostname\n        action\n        service\n        stage\n        state\n        attempt\n        failures\n        maxAttempts\n        message\n      }\n    }\n  }\n": types.JobTasksPageDocument,
    "\n  subscription JobProgressLive($id: ID!) {\n    jobProgress(jobId: $id) {\n      kind\n      taskId\n      state\n      message\n      lagged\n      jobState\n      done\n      failed\n      total\n    }\n  }\n": types.JobProgressLiveDocument,
    "\n  query TaskAttempts($id: ID!, $task: ID!) {\n    job(id: $id) {\n      id\n      task(id: $task) {\n        id\n        attempts {\n          attempt\n          agent\n          claimedAt\n          finishedAt\n          status\n          message\n          retryable\n          stdoutTail\n          stderrTail\n        }\n      }\n    }\n  }\n": types.TaskAttemptsDocument,
    "\n  subscription TaskLogLive($id: ID!) {\n    taskLog(taskId: $id) {\n      attempt\n      seq\n      stream\n      chunk\n      lagged\n    }\n  }\n": types.TaskLogLiveDocument,
    "\n  mutation PauseJob($id: ID!) {\n    pauseJob(id: $id) {\n      id\n      state\n    }\n  }\n": types.PauseJobDocument,
    "\n  mutation ResumeJob($id: ID!) {\n    resumeJob(id: $id) {\n      id\n      state\n    }\n  }\n": types.ResumeJobDocument,
    "\n  mutation AbortJob($id: ID!) {\n    abortJob(id: $id) {\n      id\n      state\n    }\n  }\n": types.AbortJobDocument,
    "\n  mutation RetryJob($id: ID!) {\n    retryJob(id: $id) {\n      id\n      state\n    }\n  }\n": types.RetryJobDocument,
    "\n  query MySSHKeys {\n    me {\n      sshKeys {\n        id\n        name\n        type\n        fingerprint\n        createdAt\n      }\n    }\n  }\n": types.MySshKeysDocument,
    "\n  mutation AddSSHKey($publicKey: String!, $name: String) {\n    addSSHKey(publicKey: $publicKey, name: $name) {\n      id\n    }\n  }\n": types.AddSshKeyDocument,
    "\n  mutation RemoveSSHKey($id: ID!) {\n    removeSSHKey(id: $id)\n  }\n": types.RemoveSshKeyDocument,
    "\n  query MyLiveClusters {\n    clusters(first: 200, status: [ACTIVE, INCONSISTENT]) {\n      nodes {\n        id\n        owner\n      }\n      hasNextPage\n    }\n  }\n": types.MyLiveClustersDocument,
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
export function graphql(source: "\n  query ClusterTemplate($name: String!) {\n    catalog {\n      entity(kind: CLUSTERTEMPLATES, name: $name) {\n        name\n        document\n      }\n    }\n  }\n"): (typeof documents)["\n  query ClusterTemplate($name: String!) {\n    catalog {\n      entity(kind: CLUSTERTEMPLATES, name: $name) {\n        name\n        document\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SetClusterExpireTime($id: ID!, $t: Time!) {\n    setClusterExpireTime(id: $id, expireTime: $t) {\n      id\n      expireTime\n    }\n  }\n"): (typeof documents)["\n  mutation SetClusterExpireTime($id: ID!, $t: Time!) {\n    setClusterExpireTime(id: $id, expireTime: $t) {\n      id\n      expireTime\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation PreviewOperation($id: ID!, $input: OperationInput!) {\n    previewOperation(clusterId: $id, input: $input) {\n      action\n      added {\n        nodenum\n        hostname\n        services\n        hardwaretype\n        imagetype\n        flavor\n        image\n      }\n      removed\n      changed {\n        nodenum\n        add\n      }\n      configChanges {\n        path\n        kind\n        old\n        new\n      }\n      capacity {\n        provider\n        pool\n        nodes\n        used\n        free\n        requested\n      }\n      tasks {\n        ref\n        nodenum\n        action\n        service\n        stage\n      }\n      edges\n      planHash\n      sync {\n        fromVersion\n        toVersion\n        addServices\n        keptServices\n        constraintChanges {\n          path\n          old\n          new\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation PreviewOperation($id: ID!, $input: OperationInput!) {\n    previewOperation(clusterId: $id, input: $input) {\n      action\n      added {\n        nodenum\n        hostname\n        services\n        hardwaretype\n        imagetype\n        flavor\n        image\n      }\n      removed\n      changed {\n        nodenum\n        add\n      }\n      configChanges {\n        path\n        kind\n        old\n        new\n      }\n      capacity {\n        provider\n        pool\n        nodes\n        used\n        free\n        requested\n      }\n      tasks {\n        ref\n        nodenum\n        action\n        service\n        stage\n      }\n      edges\n      planHash\n      sync {\n        fromVersion\n        toVersion\n        addServices\n        keptServices\n        constraintChanges {\n          path\n          old\n          new\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RunOperation($id: ID!, $input: OperationInput!, $hash: String) {\n    runOperation(clusterId: $id, input: $input, expectedPlanHash: $hash) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation RunOperation($id: ID!, $input: OperationInput!, $hash: String) {\n    runOperation(clusterId: $id, input: $input, expectedPlanHash: $hash) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation DeleteCluster($id: ID!) {\n    deleteCluster(id: $id) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation DeleteCluster($id: ID!) {\n    deleteCluster(id: $id) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription ClusterChanges {\n    clusterChanges {\n      kind\n      clusterId\n      state\n      lagged\n    }\n  }\n"): (typeof documents)["\n  subscription ClusterChanges {\n    clusterChanges {\n      kind\n      clusterId\n      state\n      lagged\n    }\n  }\n"];
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
export function graphql(source: "\n  query AdminUsers {\n    users {\n      name\n      role\n      createdAt\n    }\n    me {\n      tenant {\n        id\n        adminSSHKeys\n      }\n    }\n    apiTokens {\n      id\n      name\n      kind\n      user\n      createdAt\n      lastUsedAt\n      revokedAt\n    }\n  }\n"): (typeof documents)["\n  query AdminUsers {\n    users {\n      name\n      role\n      createdAt\n    }\n    me {\n      tenant {\n        id\n        adminSSHKeys\n      }\n    }\n    apiTokens {\n      id\n      name\n      kind\n      user\n      createdAt\n      lastUsedAt\n      revokedAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AdminSetTenantAdminSSHKeys($enabled: Boolean!) {\n    setTenantAdminSSHKeys(enabled: $enabled) {\n      id\n      adminSSHKeys\n    }\n  }\n"): (typeof documents)["\n  mutation AdminSetTenantAdminSSHKeys($enabled: Boolean!) {\n    setTenantAdminSSHKeys(enabled: $enabled) {\n      id\n      adminSSHKeys\n    }\n  }\n"];
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
export function graphql(source: "\n  query ClusterSummary($id: ID!) {\n    cluster(id: $id) {\n      id\n      name\n      description\n      owner\n      status\n      message\n      template\n      provider\n      services\n      size\n      dnsSuffix\n      expireTime\n      createdAt\n      updatedAt\n      config\n      nodes {\n        id\n        nodenum\n        hostname\n        ipaddresses\n        hardwaretype\n        imagetype\n        flavor\n        image\n        services\n        state\n        stateReason\n        sshCommand\n        hostKeys {\n          type\n          fingerprint\n        }\n        serviceStates {\n          service\n          state\n          action\n          message\n        }\n      }\n      serviceSummary {\n        service\n        nodes\n        states {\n          state\n          count\n        }\n        summary\n      }\n      latestJob {\n        id\n        action\n        state\n        message\n      }\n      lastCheck {\n        at\n        jobId\n        healthy\n        nodes {\n          nodeId\n          nodenum\n          hostname\n          reachable\n          findings {\n            kind\n            service\n            detail\n          }\n          unchecked\n        }\n      }\n      jobs {\n        id\n        action\n        state\n        message\n        createdAt\n        updatedAt\n        counts {\n          total\n          complete\n          failed\n          skipped\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query ClusterSummary($id: ID!) {\n    cluster(id: $id) {\n      id\n      name\n      description\n      owner\n      status\n      message\n      template\n      provider\n      services\n      size\n      dnsSuffix\n      expireTime\n      createdAt\n      updatedAt\n      config\n      nodes {\n        id\n        nodenum\n        hostname\n        ipaddresses\n        hardwaretype\n        imagetype\n        flavor\n        image\n        services\n        state\n        stateReason\n        sshCommand\n        hostKeys {\n          type\n          fingerprint\n        }\n        serviceStates {\n          service\n          state\n          action\n          message\n        }\n      }\n      serviceSummary {\n        service\n        nodes\n        states {\n          state\n          count\n        }\n        summary\n      }\n      latestJob {\n        id\n        action\n        state\n        message\n      }\n      lastCheck {\n        at\n        jobId\n        healthy\n        nodes {\n          nodeId\n          nodenum\n          hostname\n          reachable\n          findings {\n            kind\n            service\n            detail\n          }\n          unchecked\n        }\n      }\n      jobs {\n        id\n        action\n        state\n        message\n        createdAt\n        updatedAt\n        counts {\n          total\n          complete\n          failed\n          skipped\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ClusterList($first: Int!, $after: String, $status: [ClusterStatus!], $template: String) {\n    clusters(first: $first, after: $after, status: $status, template: $template) {\n      nodes {\n        id\n        name\n        status\n        template\n        owner\n        size\n        expireTime\n        createdAt\n        latestJob {\n          id\n          action\n          state\n        }\n      }\n      endCursor\n      hasNextPage\n    }\n  }\n"): (typeof documents)["\n  query ClusterList($first: Int!, $after: String, $status: [ClusterStatus!], $template: String) {\n    clusters(first: $first, after: $after, status: $status, template: $template) {\n      nodes {\n        id\n        name\n        status\n        template\n        owner\n        size\n        expireTime\n        createdAt\n        latestJob {\n          id\n          action\n          state\n        }\n      }\n      endCursor\n      hasNextPage\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query TemplateNames {\n    catalog {\n      entities(kind: CLUSTERTEMPLATES) {\n        name\n      }\n    }\n  }\n"): (typeof documents)["\n  query TemplateNames {\n    catalog {\n      entities(kind: CLUSTERTEMPLATES) {\n        name\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query CreateCatalog {\n    catalog {\n      templates: entities(kind: CLUSTERTEMPLATES) {\n        name\n        document\n      }\n      providers: entities(kind: PROVIDERS) {\n        name\n        document\n      }\n      providerTypes: entities(kind: PROVIDERTYPES) {\n        name\n        document\n      }\n    }\n  }\n"): (typeof documents)["\n  query CreateCatalog {\n    catalog {\n      templates: entities(kind: CLUSTERTEMPLATES) {\n        name\n        document\n      }\n      providers: entities(kind: PROVIDERS) {\n        name\n        document\n      }\n      providerTypes: entities(kind: PROVIDERTYPES) {\n        name\n        document\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation PreviewCluster($input: ClusterInput!) {\n    previewCluster(input: $input) {\n      template\n      provider\n      services\n      nodes {\n        nodenum\n        hostname\n        services\n        hardwaretype\n        imagetype\n        flavor\n        image\n      }\n      tasks {\n        ref\n        nodenum\n        action\n        service\n        stage\n      }\n      edges\n      planHash\n      warnings\n      capacity {\n        provider\n        pool\n        nodes\n        used\n        free\n        requested\n      }\n      quota {\n        maxClusters\n        maxNodes\n        clusters\n        nodes\n        addClusters\n        addNodes\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation PreviewCluster($input: ClusterInput!) {\n    previewCluster(input: $input) {\n      template\n      provider\n      services\n      nodes {\n        nodenum\n        hostname\n        services\n        hardwaretype\n        imagetype\n        flavor\n        image\n      }\n      tasks {\n        ref\n        nodenum\n        action\n        service\n        stage\n      }\n      edges\n      planHash\n      warnings\n      capacity {\n        provider\n        pool\n        nodes\n        used\n        free\n        requested\n      }\n      quota {\n        maxClusters\n        maxNodes\n        clusters\n        nodes\n        addClusters\n        addNodes\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CreateCluster($input: ClusterInput!, $hash: String) {\n    createCluster(input: $input, expectedPlanHash: $hash) {\n      id\n      latestJob {\n        id\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation CreateCluster($input: ClusterInput!, $hash: String) {\n    createCluster(input: $input, expectedPlanHash: $hash) {\n      id\n      latestJob {\n        id\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query JobDetail($id: ID!) {\n    job(id: $id) {\n      id\n      clusterId\n      action\n      state\n      message\n      planHash\n      createdAt\n      updatedAt\n      counts {\n        total\n      }\n    }\n  }\n"): (typeof documents)["\n  query JobDetail($id: ID!) {\n    job(id: $id) {\n      id\n      clusterId\n      action\n      state\n      message\n      planHash\n      createdAt\n      updatedAt\n      counts {\n        total\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query JobTasksPage($id: ID!, $first: Int!, $after: ID) {\n    job(id: $id) {\n      id\n      tasks(first: $first, after: $after) {\n        id\n        nodeId\n        hostname\n        action\n        service\n        stage\n        state\n        attempt\n        failures\n        maxAttempts\n        message\n      }\n    }\n  }\n"): (typeof documents)["\n  query JobTasksPage($id: ID!, $first: Int!, $after: ID) {\n    job(id: $id) {\n      id\n      tasks(first: $first, after: $after) {\n        id\n        nodeId\n        hostname\n        action\n        service\n        stage\n        state\n        attempt\n        failures\n        maxAttempts\n        message\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription JobProgressLive($id: ID!) {\n    jobProgress(jobId: $id) {\n      kind\n      taskId\n      state\n      message\n      lagged\n      jobState\n      done\n      failed\n      total\n    }\n  }\n"): (typeof documents)["\n  subscription JobProgressLive($id: ID!) {\n    jobProgress(jobId: $id) {\n      kind\n      taskId\n      state\n      message\n      lagged\n      jobState\n      done\n      failed\n      total\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query TaskAttempts($id: ID!, $task: ID!) {\n    job(id: $id) {\n      id\n      task(id: $task) {\n        id\n        attempts {\n          attempt\n          agent\n          claimedAt\n          finishedAt\n          status\n          message\n          retryable\n          stdoutTail\n          stderrTail\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query TaskAttempts($id: ID!, $task: ID!) {\n    job(id: $id) {\n      id\n      task(id: $task) {\n        id\n        attempts {\n          attempt\n          agent\n          claimedAt\n          finishedAt\n          status\n          message\n          retryable\n          stdoutTail\n          stderrTail\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription TaskLogLive($id: ID!) {\n    taskLog(taskId: $id) {\n      attempt\n      seq\n      stream\n      chunk\n      lagged\n    }\n  }\n"): (typeof documents)["\n  subscription TaskLogLive($id: ID!) {\n    taskLog(taskId: $id) {\n      attempt\n      seq\n      stream\n      chunk\n      lagged\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation PauseJob($id: ID!) {\n    pauseJob(id: $id) {\n      id\n      state\n    }\n  }\n"): (typeof documents)["\n  mutation PauseJob($id: ID!) {\n    pauseJob(id: $id) {\n      id\n      state\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ResumeJob($id: ID!) {\n    resumeJob(id: $id) {\n      id\n      state\n    }\n  }\n"): (typeof documents)["\n  mutation ResumeJob($id: ID!) {\n    resumeJob(id: $id) {\n      id\n      state\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AbortJob($id: ID!) {\n    abortJob(id: $id) {\n      id\n      state\n    }\n  }\n"): (typeof documents)["\n  mutation AbortJob($id: ID!) {\n    abortJob(id: $id) {\n      id\n      state\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RetryJob($id: ID!) {\n    retryJob(id: $id) {\n      id\n      state\n    }\n  }\n"): (typeof documents)["\n  mutation RetryJob($id: ID!) {\n    retryJob(id: $id) {\n      id\n      state\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query MySSHKeys {\n    me {\n      sshKeys {\n        id\n        name\n        type\n        fingerprint\n        createdAt\n      }\n    }\n  }\n"): (typeof documents)["\n  query MySSHKeys {\n    me {\n      sshKeys {\n        id\n        name\n        type\n        fingerprint\n        createdAt\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AddSSHKey($publicKey: String!, $name: String) {\n    addSSHKey(publicKey: $publicKey, name: $name) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation AddSSHKey($publicKey: String!, $name: String) {\n    addSSHKey(publicKey: $publicKey, name: $name) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RemoveSSHKey($id: ID!) {\n    removeSSHKey(id: $id)\n  }\n"): (typeof documents)["\n  mutation RemoveSSHKey($id: ID!) {\n    removeSSHKey(id: $id)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query MyLiveClusters {\n    clusters(first: 200, status: [ACTIVE, INCONSISTENT]) {\n      nodes {\n        id\n        owner\n      }\n      hasNextPage\n    }\n  }\n"): (typeof documents)["\n  query MyLiveClusters {\n    clusters(first: 200, status: [ACTIVE, INCONSISTENT]) {\n      nodes {\n        id\n        owner\n      }\n      hasNextPage\n    }\n  }\n"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;