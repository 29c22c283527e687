// Stopping a stack recorded in <dataDir>/stack.json from another process (`npm run stop`, or
// `npm start` cleaning up after a supervisor that died).
import { stopPostgres } from './db.ts'
import { alive, commandLine, postmasterPid, readRecord, recordFile, sleep } from './supervise.ts'

async function waitGone(pid: number, ms: number) {
  const end = Date.now() + ms
  while (alive(pid) && Date.now() < end) await sleep(100)
  return !alive(pid)
}

/** Ends a recorded process if it is still the one recorded (matched by its command line). */
async function end(pid: number, looksLike: RegExp): Promise<boolean> {
  if (!alive(pid) || !looksLike.test(commandLine(pid))) return false
  try {
    Deno.kill(pid, 'SIGTERM')
  } catch { /* gone */ }
  if (!(await waitGone(pid, 5000))) {
    try {
      Deno.kill(pid, 'SIGKILL')
    } catch { /* gone */ }
    await waitGone(pid, 2000)
  }
  return true
}

/**
 * Stops whatever the record names: first the supervisor (which stops its parts and
 * Postgres), then any part still running, then Postgres. Returns what had to be stopped.
 */
export async function stopRecordedStack(dataDir: string): Promise<string[]> {
  const record = await readRecord(dataDir)
  const stopped: string[] = []
  if (record) {
    if (await end(record.supervisor, /deno/)) stopped.push(`supervisor (pid ${record.supervisor})`)
    for (const [name, pid] of Object.entries(record.parts)) {
      if (await end(pid, name === 'PostgREST' ? /postgrest/ : /deno|gateway/)) stopped.push(`${name} (pid ${pid})`)
    }
  }
  const clusterDir = record?.clusterDir ?? `${dataDir}/db`
  const pg = postmasterPid(clusterDir)
  if (pg !== null && alive(pg)) {
    await stopPostgres({ dataDir: clusterDir, logFile: `${dataDir}/logs/postgres.log`, port: 0 })
    stopped.push(`Postgres (pid ${pg})`)
  }
  await Deno.remove(recordFile(dataDir)).catch(() => {})
  return stopped
}
