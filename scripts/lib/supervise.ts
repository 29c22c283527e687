// Process facts the stack scripts need: is a pid alive (and what is it), the last lines of a
// log, and the record of a running stack (<dataDir>/stack.json) that `npm start` and
// `npm run stop` share.

/** True when the process exists and is not a zombie. */
export function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`)
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return false
  }
}

/** The process's command line ('' when it is gone). */
export function commandLine(pid: number): string {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).replaceAll('\0', ' ').trim()
  } catch {
    return ''
  }
}

/** The last `n` non-empty lines of a log file, indented for a message. */
export async function lastLines(file: string, n = 12): Promise<string> {
  const text = await Deno.readTextFile(file).catch(() => '')
  const lines = text.split('\n').filter((l) => l.trim()).slice(-n)
  return lines.length ? lines.map((l) => `    | ${l}`).join('\n') : '    (its log is empty)'
}

/** What a running stack records about itself, so another command can find and stop it. */
export interface StackRecord {
  supervisor: number // the process that started the stack and supervises it
  parts: Record<string, number> // PostgREST and gateway pids (Postgres: its postmaster.pid)
  clusterDir: string
  apiUrl: string
  dbUrl: string
}

export const recordFile = (dataDir: string) => `${dataDir}/stack.json`

export async function readRecord(dataDir: string): Promise<StackRecord | null> {
  try {
    const r = JSON.parse(await Deno.readTextFile(recordFile(dataDir)))
    return typeof r.supervisor === 'number' && r.parts ? r as StackRecord : null
  } catch {
    return null
  }
}

/** The record, if the process that wrote it still runs (a Deno process, not a reused pid). */
export async function runningStack(dataDir: string): Promise<StackRecord | null> {
  const r = await readRecord(dataDir)
  return r && alive(r.supervisor) && /deno/.test(commandLine(r.supervisor)) ? r : null
}

/** The postmaster's pid from the cluster's lock file, or null. */
export function postmasterPid(clusterDir: string): number | null {
  try {
    const pid = Number(Deno.readTextFileSync(`${clusterDir}/postmaster.pid`).split('\n')[0])
    return Number.isInteger(pid) && pid > 0 ? pid : null
  } catch {
    return null
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
