// npm start: brings up the local stack in the foreground and supervises it; Ctrl-C (or
// `npm run stop` elsewhere) stops everything it started, also in the middle of starting.
// A second start reuses the database and applies only new migrations.
import postgres from 'postgres'
import { DEV } from './lib/ports.ts'
import { StackError } from './lib/proc.ts'
import { startStack } from './lib/stack.ts'
import { demoTokens, statusText } from './lib/status.ts'
import { runningStack } from './lib/supervise.ts'
import { stopRecordedStack } from './lib/stop.ts'

const running = await runningStack(DEV.dataDir)
if (running) {
  console.error(`npm start: a local stack is already running (supervisor pid ${running.supervisor}, API ${running.apiUrl}, ` +
    `DB ${running.dbUrl}).\nStop it with \`npm run stop\` (or Ctrl-C in its terminal), then start again.`)
  Deno.exit(1)
}
// A stack whose supervisor died (killed, machine suspended) may have left parts behind.
const leftovers = await stopRecordedStack(DEV.dataDir)
if (leftovers.length) console.log(`Cleaned up what a previous stack left running: ${leftovers.join(', ')}`)

const abort = new AbortController()
let stack: Awaited<ReturnType<typeof startStack>> | undefined
const shutdown = async () => {
  if (!stack) {
    console.log('\nInterrupted: stopping what was started...')
    abort.abort() // the start sees it at its next step, stops everything and throws
    return
  }
  console.log('\nStopping the local stack...')
  await stack.stop()
  console.log('Stopped.')
  Deno.exit(0)
}
Deno.addSignalListener('SIGINT', shutdown)
Deno.addSignalListener('SIGTERM', shutdown)

try {
  stack = await startStack({
    ...DEV,
    signal: abort.signal,
    log: (line) => console.log(line),
    onGiveUp: (message) => {
      console.error(`npm start: ${message}`)
      Deno.exit(1)
    },
  })
  const sql = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  const tokens = await demoTokens(sql, stack.jwtSecret).finally(() => sql.end())
  console.log(statusText(stack, tokens, `${DEV.dataDir}/logs/`))
} catch (e) {
  if (abort.signal.aborted) console.error('npm start: interrupted; everything it had started is stopped.')
  else console.error(e instanceof StackError ? `npm start: ${e.message}` : e)
  await stack?.stop()
  Deno.exit(1)
}
