// npm run stop: stops a stack started elsewhere (another terminal, a background job).
import { stopPostgres } from './lib/db.ts'
import { DEV } from './lib/ports.ts'

const dataDir = Deno.args[0] ?? DEV.dataDir
let info: { pids: number[]; dataDir: string }
try {
  info = JSON.parse(await Deno.readTextFile(`${dataDir}/stack.json`))
} catch {
  info = { pids: [], dataDir: `${dataDir}/db` }
}
// The supervising start script first: it stops its children and Postgres itself.
for (const pid of info.pids) {
  try {
    Deno.kill(pid, 'SIGTERM')
  } catch { /* already gone */ }
}
await new Promise((r) => setTimeout(r, 1500))
await stopPostgres({ dataDir: info.dataDir, logFile: `${dataDir}/logs/postgres.log`, port: 0 })
await Deno.remove(`${dataDir}/stack.json`).catch(() => {})
console.log(info.pids.length ? 'Stopped the local stack.' : 'No running stack was recorded; made sure Postgres is stopped.')
