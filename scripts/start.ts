// npm start: brings up the local stack in the foreground; Ctrl-C stops everything it started.
// A second start reuses the database and applies only new migrations.
import postgres from 'postgres'
import { DEV } from './lib/ports.ts'
import { StackError } from './lib/proc.ts'
import { startStack } from './lib/stack.ts'
import { mintUserToken } from './lib/tokens.ts'

try {
  const stack = await startStack({ ...DEV })
  const sql = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  const users = await sql<{ email: string; role: string }[]>`select u.email, p.role from auth.users u join public.profiles p on p.id = u.id
                          where u.email like '%@example.com' order by u.email`
  const tokens = []
  for (const u of users) {
    tokens.push({ ...u, token: (await mintUserToken(sql, u.email, { secret: stack.jwtSecret, expiresInSeconds: 7 * 86400 })).token })
  }
  await sql.end()

  console.log(`
Local stack is up.

  API URL         ${stack.apiUrl}
  REST            ${stack.apiUrl}/rest/v1
  Functions       ${stack.apiUrl}/functions/v1/api/...   ${stack.apiUrl}/functions/v1/health
  Storage         ${stack.apiUrl}/storage/v1
  Database        ${stack.dbUrl}
  JWT secret      ${stack.jwtSecret}
  anon key        ${stack.anonKey}
  service_role key ${stack.serviceRoleKey}

Demo users (bearer tokens valid 7 days; \`npm run token -- <email>\` mints another):
${tokens.map((t) => `  ${t.email} (${t.role})\n    ${t.token}`).join('\n')}

Try: curl -H "Authorization: Bearer <token>" ${stack.apiUrl}/functions/v1/api/user/profile
Logs: ${DEV.dataDir}/logs/. Press Ctrl-C to stop.`)

  const shutdown = async () => {
    console.log('\nStopping the local stack...')
    await stack.stop()
    console.log('Stopped.')
    Deno.exit(0)
  }
  Deno.addSignalListener('SIGINT', shutdown)
  Deno.addSignalListener('SIGTERM', shutdown)
} catch (e) {
  console.error(e instanceof StackError ? `npm start: ${e.message}` : e)
  Deno.exit(1)
}
