// The admin console's build: a static single-page app under /dashboard/admin/ (SPEC's admin
// browser routes). `npm run admin:build` writes admin/dist; any static host serves it, with every
// unknown path under /dashboard/admin and /auth/impersonate-callback answered by index.html.
import { defineConfig } from 'vite'
import react from '@vitejs/plugin-react'

export default defineConfig({
  root: import.meta.dirname,
  base: '/dashboard/admin/',
  plugins: [react()],
  // VITE_SUPABASE_URL and VITE_SUPABASE_ANON_KEY (public values) are read at build time; nothing
  // else from the environment reaches the bundle (Vite exposes only VITE_-prefixed variables).
  envPrefix: 'VITE_',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 600,
  },
  server: {
    port: 5173,
    strictPort: true,
  },
})
