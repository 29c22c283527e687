import { extract, plan } from '@supabase/pg-delta'
import pg from 'pg'
const a = new pg.Pool({ connectionString: 'postgresql://postgres:postgres@127.0.0.1:21421/postgres', max: 4 })
const b = new pg.Pool({ connectionString: 'postgresql://postgres:postgres@127.0.0.1:21422/postgres', max: 4 })
const t = Date.now()
const [sa, sb] = await Promise.all([extract(a), extract(b)])
const p = plan(sa.factBase, sb.factBase)
console.log(Date.now() - t, p.actions.length)
for (const x of p.actions) console.log(x.verb, JSON.stringify(x.produces), JSON.stringify(x.destroys), x.sql.slice(0, 100))
console.log(p.deltas.map((d: any) => JSON.stringify(d).slice(0, 200)).join('\n'))
await a.end(); await b.end()
