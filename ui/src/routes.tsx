// Every page of the UI. Views are loaded when first visited (route-level
// code splitting), so the first load carries only the shell.
import { createBrowserRouter, Navigate } from 'react-router';
import { AdminOnly, SignedIn } from './components/auth/guards';

export const router = createBrowserRouter([
  { path: '/signin', lazy: () => import('./views/auth/SignInView') },
  {
    element: <SignedIn />,
    children: [
      { index: true, element: <Navigate to="/clusters" replace /> },
      { path: 'clusters', lazy: () => import('./views/cluster/ClustersView') },
      { path: 'clusters/new', lazy: () => import('./views/cluster/CreateClusterView') },
      { path: 'clusters/:id', lazy: () => import('./views/cluster/ClusterView') },
      { path: 'clusters/:id/jobs/:jobId', lazy: () => import('./views/cluster/JobView') },
      { path: 'templates', lazy: () => import('./views/catalog/TemplatesView') },
      { path: 'profile/ssh-keys', lazy: () => import('./views/profile/SSHKeysView') },
      {
        path: 'admin',
        element: <AdminOnly />,
        children: [
          { index: true, element: <Navigate to="/admin/catalog" replace /> },
          { path: 'catalog', lazy: () => import('./views/admin/CatalogView') },
          { path: 'catalog/import', lazy: () => import('./views/admin/ImportView') },
          { path: 'catalog/:kind/:name', lazy: () => import('./views/admin/EntityView') },
          { path: 'resources', lazy: () => import('./views/admin/ResourcesView') },
          { path: 'users', lazy: () => import('./views/admin/UsersView') },
          { path: 'agents', lazy: () => import('./views/admin/AgentsView') },
          { path: 'tenants', lazy: () => import('./views/admin/TenantsView') },
        ],
      },
      { path: '*', lazy: () => import('./views/NotFoundView') },
    ],
  },
]);
