// npm run stop [dataDir]: stops a stack started elsewhere (another terminal, a background job,
// a bench run kept with BENCH_KEEP=1), including parts a crashed start left behind.
import { DEV } from './lib/ports.ts'
import { stopRecordedStack } from './lib/stop.ts'

const dataDir = Deno.args[0] ?? DEV.dataDir
const stopped = await stopRecordedStack(dataDir)
console.log(stopped.length ? `Stopped the local stack: ${stopped.join(', ')}.` : `No local stack was running (${dataDir}).`)
