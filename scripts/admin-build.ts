// npm run admin:build: builds the admin console into admin/dist (npm start does it when a source
// changed). For a static host set VITE_SUPABASE_URL and VITE_SUPABASE_ANON_KEY (public values).
import { ADMIN_DIST, buildAdminConsole } from './lib/admin_console.ts'

await buildAdminConsole({ force: true, log: console.log })
console.log(`Built ${ADMIN_DIST}: serve it at /dashboard/admin/ with index.html as the fallback (docs/admin_console.md)`)
