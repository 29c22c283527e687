// What `npm start` prints once the stack is up: what `supabase status` prints (API URL, DB
// URL, JWT secret, anon and service-role keys), the cron secrets in force, and a bearer token
// for each demo user of the seed (supabase/seed.sql) — not for every user in the database.
import type postgres from 'postgres'
import { ROOT } from './proc.ts'
import type { Stack } from './stack.ts'
import { mintUserToken } from './tokens.ts'

/** The e-mail addresses of the users supabase/seed.sql writes (private.new_auth_user, or an insert into auth.users). */
export async function seedDemoEmails(seedFile = `${ROOT}/supabase/seed.sql`): Promise<string[]> {
  const text = await Deno.readTextFile(seedFile).catch(() => '')
  const emails = new Set<string>()
  for (const insert of text.matchAll(/(insert\s+into\s+auth\.users|private\.new_auth_user)\b[\s\S]*?;/gi)) {
    for (const m of insert[0].matchAll(/'([^'\s@]+@[^'\s@]+\.[^'\s@]+)'/g)) emails.add(m[1].toLowerCase())
  }
  return [...emails]
}

export interface DemoToken {
  email: string
  role: string
  token: string
}

/** A bearer token for each seed demo user still in the database. */
export async function demoTokens(sql: postgres.Sql, secret: string, expiresInSeconds = 7 * 86400): Promise<DemoToken[]> {
  const emails = await seedDemoEmails()
  const users = await sql<{ email: string; role: string }[]>`
    select u.email, p.role from auth.users u join public.profiles p on p.id = u.id
    where lower(u.email) = any(${emails}::text[]) order by u.email`
  const out: DemoToken[] = []
  for (const u of users) out.push({ ...u, token: (await mintUserToken(sql, u.email, { secret, expiresInSeconds })).token })
  return out
}

export function statusText(stack: Stack, tokens: DemoToken[], logsDir: string): string {
  const width = Math.max(18, ...Object.keys(stack.cronSecrets).map((k) => k.length + 2))
  const pad = (s: string) => s.padEnd(width)
  const secrets = Object.entries(stack.cronSecrets).map(([k, v]) => `  ${pad(k)}${v}`).join('\n')
  return `
Local stack is up.

  ${pad('API URL')}${stack.apiUrl}
  ${pad('REST')}${stack.apiUrl}/rest/v1
  ${pad('Functions')}${stack.apiUrl}/functions/v1/api/...   ${stack.apiUrl}/functions/v1/health
  ${pad('Storage')}${stack.apiUrl}/storage/v1
  ${pad('Auth')}${stack.apiUrl}/auth/v1
  ${pad('Inbox')}${stack.inboxUrl}   (e-mails Auth sends: confirmations, magic links, resets)
  ${pad('API reference')}${stack.apiUrl}/docs
  ${pad('Admin console')}${stack.apiUrl}/dashboard/admin   (sign in as admin@example.com / demo-password)
  ${pad('DB URL')}${stack.dbUrl}
  ${pad('JWT secret')}${stack.jwtSecret}
  ${pad('anon key')}${stack.anonKey}
  ${pad('service_role key')}${stack.serviceRoleKey}

Cron secrets in force (x-cron-secret; set one in the environment to change it):
${secrets}

Demo users of supabase/seed.sql (bearer tokens valid 7 days; \`npm run token -- <email>\` mints one for any user):
${tokens.length ? tokens.map((t) => `  ${t.email} (${t.role})\n    ${t.token}`).join('\n') : '  (none: the seed users were removed)'}

Try: curl -H "Authorization: Bearer <token>" ${stack.apiUrl}/functions/v1/api/user/profile
Logs: ${logsDir}. Press Ctrl-C (or run \`npm run stop\`) to stop.`
}
