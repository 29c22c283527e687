import { ensureCluster, startPostgres, prepareDatabase } from './lib/db.ts'
const port = Number(Deno.args[0]); const dir = Deno.args[1]
await Deno.mkdir(dir, { recursive: true })
if (Deno.uid() === 0) await new Deno.Command('chown', { args: ['postgres:postgres', dir] }).output()
const c = { dataDir: `${dir}/db`, logFile: `${dir}/pg.log`, port }
const t0 = Date.now()
await ensureCluster(c, { throwaway: true })
console.log('initdb', Date.now() - t0)
await startPostgres(c)
console.log('start', Date.now() - t0)
await prepareDatabase(port, false, console.log)
console.log('migrated', Date.now() - t0)
