// npm run db:push: applies new migrations with the Supabase CLI (`supabase db push`).
// Without arguments it targets the local stack; pass --db-url <url> (or set SUPABASE_DB_URL)
// for another database, or run `npx supabase db push` after `supabase link` for a hosted one.
import { dbUrl } from './lib/db.ts'
import { DEV } from './lib/ports.ts'
import { BIN, ROOT } from './lib/proc.ts'

const localUrl = Deno.args.length ? undefined : Deno.env.get('SUPABASE_DB_URL') ?? dbUrl(DEV.dbPort)
const args = localUrl ? ['--db-url', localUrl] : Deno.args
const status = await new Deno.Command(`${BIN}/supabase`, {
  args: ['db', 'push', '--include-all', '--yes', ...args],
  cwd: ROOT,
  stdin: 'inherit',
  stdout: 'inherit',
  stderr: 'inherit',
}).spawn().status
if (status.success && localUrl) {
  // The local PostgREST picks up the new schema without a restart.
  await new Deno.Command('psql', { args: [localUrl, '-qXc', "notify pgrst, 'reload schema'"] }).output().catch(() => {})
}
Deno.exit(status.code)
