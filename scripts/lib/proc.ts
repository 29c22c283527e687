// Small process helpers shared by the stack scripts.

export const ROOT = new URL('../../', import.meta.url).pathname.replace(/\/$/, '')
export const BIN = `${ROOT}/node_modules/.bin`
export const PG_BIN = '/usr/lib/postgresql/15/bin'

export const isRoot = () => Deno.uid() === 0

export class StackError extends Error {}

/** Runs a command to completion; throws with its output when it fails. */
export async function run(
  cmd: string,
  args: string[],
  opts: { env?: Record<string, string>; asPostgres?: boolean; stdin?: string; cwd?: string } = {},
): Promise<string> {
  let command = cmd
  let argv = args
  if (opts.asPostgres && isRoot()) {
    // Postgres refuses to run as root: run its tools as the postgres user.
    const envArgs = Object.entries(opts.env ?? {}).map(([k, v]) => `${k}=${v}`)
    command = 'runuser'
    argv = ['-u', 'postgres', '--', 'env', ...envArgs, cmd, ...args]
  }
  const child = new Deno.Command(command, {
    args: argv,
    env: opts.env,
    cwd: opts.cwd,
    stdin: opts.stdin === undefined ? 'null' : 'piped',
    stdout: 'piped',
    stderr: 'piped',
  }).spawn()
  if (opts.stdin !== undefined) {
    const w = child.stdin.getWriter()
    await w.write(new TextEncoder().encode(opts.stdin))
    await w.close()
  }
  const out = await child.output()
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr)
  if (!out.success) throw new StackError(`${cmd} ${args.join(' ')} failed (exit ${out.code}):\n${text}`)
  return text
}

/** True when something already listens on the port. */
export function portInUse(port: number): boolean {
  try {
    const l = Deno.listen({ hostname: '127.0.0.1', port })
    l.close()
    return false
  } catch {
    return true
  }
}

export async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    try {
      if (await probe()) return
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new StackError(`${what} did not come up within ${timeoutMs / 1000}s`)
}

export async function exists(path: string) {
  try {
    await Deno.stat(path)
    return true
  } catch {
    return false
  }
}
