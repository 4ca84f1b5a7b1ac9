import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vitest/config';

// `npm run dev` proxies the API to a running coopr server (default
// http://127.0.0.1:8080; COOPR_SERVER names another). The Host header is
// kept (no changeOrigin), so the server sees the page's own origin and its
// CSRF checks pass as they do in production.
const server = process.env.COOPR_SERVER ?? 'http://127.0.0.1:8080';

// The build empties dist/, which holds the committed placeholder that lets
// `go build` embed dist/ on a fresh clone: put it back.
function keepPlaceholder(): Plugin {
  return {
    name: 'coopr-keep-dist-placeholder',
    apply: 'build',
    closeBundle() {
      writeFileSync(resolve(import.meta.dirname, 'dist/.gitkeep'), '');
    },
  };
}

export default defineConfig({
  plugins: [react(), keepPlaceholder()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // The server serves assets/ with a year's caching: every name there
    // must carry its content's hash.
    assetsDir: 'assets',
    chunkSizeWarningLimit: 600,
  },
  server: {
    proxy: {
      '/graphql': { target: server, ws: true },
      '/auth': { target: server },
    },
  },
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
});
