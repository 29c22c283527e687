// The admin console's build: a static single-page app under /dashboard/admin/ (SPEC's admin
// browser routes). `npm run admin:build` writes admin/dist; any static host serves it, with every
// unknown path under /dashboard/admin and /auth/impersonate-callback answered by index.html.
import { defineConfig, type Plugin } from 'vite'
import react from '@vitejs/plugin-react'
import { publicKeyProblem, secretFindings } from './bundle_secrets.ts'

/** Fails any build (however started) that would ship a server-side secret, or that was given a
 *  key other than the anon or publishable one. */
function noSecrets(): Plugin {
  return {
    name: 'admin-console-no-secrets',
    buildStart() {
      const problem = publicKeyProblem(process.env.VITE_SUPABASE_ANON_KEY)
      if (problem) this.error(problem)
    },
    generateBundle(_options, bundle) {
      const files = Object.values(bundle).map((f) => ({
        name: f.fileName,
        text: f.type === 'chunk' ? f.code : typeof f.source === 'string' ? f.source : new TextDecoder().decode(f.source),
      }))
      const findings = secretFindings(files, (k) => process.env[k])
      if (findings.length) this.error(`the build would hand browsers a secret:\n  ${findings.join('\n  ')}`)
    },
  }
}

/** `npm run admin:dev`: the dev server answers /auth/impersonate-callback with the app too, as the
 *  gateway and a static host's fallback do. */
function impersonateCallbackInDev(): Plugin {
  return {
    name: 'admin-console-callback-route',
    configureServer(server) {
      server.middlewares.use((req, _res, next) => {
        if (req.url?.startsWith('/auth/impersonate-callback')) req.url = '/dashboard/admin/index.html'
        next()
      })
    },
  }
}

export default defineConfig({
  root: import.meta.dirname,
  base: '/dashboard/admin/',
  plugins: [react(), noSecrets(), impersonateCallbackInDev()],
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
