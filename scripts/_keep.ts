import { buildDatabase } from './lib/schemas.ts'
const t = Date.now()
const db = await buildDatabase({ kind: (Deno.args[0] ?? 'migrations') as 'migrations' })
console.log('built', db.url, Date.now() - t)
