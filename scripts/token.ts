// npm run token -- <email>: prints a bearer token for a user of the running local stack.
import postgres from 'postgres'
import { dbUrl } from './lib/db.ts'
import { LOCAL_JWT_SECRET } from './lib/keys.ts'
import { DEV } from './lib/ports.ts'
import { mintUserToken } from './lib/tokens.ts'

const email = Deno.args[0]
if (!email) {
  console.error('Usage: npm run token -- <email>   (demo users: alice@example.com, bob@example.com, admin@example.com)')
  Deno.exit(1)
}
const sql = postgres(Deno.env.get('SUPABASE_DB_URL') ?? dbUrl(DEV.dbPort), { max: 1, onnotice: () => {}, connect_timeout: 5 })
try {
  const { token } = await mintUserToken(sql, email, { secret: Deno.env.get('JWT_SECRET') ?? LOCAL_JWT_SECRET, expiresInSeconds: 86400 })
  console.log(token)
} catch (e) {
  console.error(`npm run token: ${(e as Error).message}. Is the stack running (npm start)?`)
  Deno.exitCode = 1
} finally {
  await sql.end()
}
