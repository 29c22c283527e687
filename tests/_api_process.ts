// The api function in a process of its own, with an environment the test chooses: how the
// endpoints behave when a provider is not configured (the shared stack always configures the
// fakes). Run directly it serves and prints `PORT <n>`; tests call withApi(env, fn).
import { handler } from '../functions/api/handler.ts'

const PROVIDER_VARIABLES = [
  'STRIPE_SECRET_KEY',
  'STRIPE_WEBHOOK_SECRET',
  'STRIPE_API_BASE',
  'STRIPE_PRICE_IDS',
  'SITE_URL',
  'RESEND_API_KEY',
  'RESEND_BASE_URL',
  'RESEND_WEBHOOK_SECRET',
  'EMAIL_FROM',
]

/** Runs `fn` against a separate api process whose environment is the stack's without any
 *  provider variable, plus `env`. `fn` gets the base URL (…/functions/v1 equivalent). */
export async function withApi(env: Record<string, string>, fn: (baseUrl: string) => Promise<void>) {
  const base = Object.fromEntries(
    Object.entries(Deno.env.toObject()).filter(([k]) => !PROVIDER_VARIABLES.includes(k)),
  )
  const child = new Deno.Command(Deno.execPath(), {
    args: ['run', '-A', new URL(import.meta.url).pathname],
    env: { ...base, ...env },
    clearEnv: true,
    stdout: 'piped',
    stderr: 'inherit',
  }).spawn()
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader()
    let out = ''
    while (!/PORT \d+/.test(out)) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`the api process ended before serving: ${out}`)
      out += value
    }
    // Keep draining what the process logs, so its console never writes into a closed pipe.
    const drained = (async () => {
      while (!(await reader.read()).done) { /* discard */ }
    })().catch(() => {})
    await fn(`http://127.0.0.1:${out.match(/PORT (\d+)/)![1]}`)
    child.kill('SIGTERM')
    await drained
  } finally {
    try {
      child.kill('SIGTERM')
    } catch { /* already gone */ }
    await child.status
  }
}

if (import.meta.main) {
  Deno.serve({ hostname: '127.0.0.1', port: 0, onListen: ({ port }) => console.log(`PORT ${port}`) }, handler)
}
