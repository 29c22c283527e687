// Headless Chromium (Debian's, installed by scripts/bootstrap.sh) driven over the DevTools
// protocol, and a tiny static server for the pages it opens. No browser download, no npm driver:
// the protocol is JSON over a WebSocket, which Deno speaks natively.

const CHROMIUM = Deno.env.get('CHROMIUM_BIN') ?? '/usr/bin/chromium'

/** What the page said (console, uncaught errors, the browser's own log such as CORS refusals),
 *  shown when a step fails. */
export type PageLog = string[]

export interface Browser {
  /** Opens `url` in the page and waits for its load event. */
  goto(url: string): Promise<void>
  /** Evaluates an expression in the page (awaiting a promise) and returns its JSON value. */
  evaluate<T = any>(expression: string): Promise<T>
  /** Polls an expression until it is truthy; returns its value. */
  waitFor<T = any>(expression: string, what: string, timeoutMs?: number): Promise<T>
  log: PageLog
  close(): Promise<void>
}

/** Fails with the command that installs Chromium when it is missing (CI installs it, so the
 *  client tests never skip). */
function requireChromium() {
  try {
    Deno.statSync(CHROMIUM)
  } catch {
    throw new Error(
      `Chromium is missing (${CHROMIUM}): run \`bash scripts/bootstrap.sh\` (as root or with sudo), ` +
        'or `sudo apt-get update && sudo apt-get install -y chromium`',
    )
  }
}

/** Starts headless Chromium with a new empty profile, its DevTools endpoint on `debugPort`. */
export async function launchBrowser(debugPort: number): Promise<Browser> {
  requireChromium()
  // A Chromium left over from a killed run would answer on the port instead of ours.
  try {
    Deno.listen({ hostname: '127.0.0.1', port: debugPort }).close()
  } catch {
    throw new Error(
      `port ${debugPort} (Chromium's DevTools) is taken: a browser left over from an earlier run?`,
    )
  }
  const profile = await Deno.makeTempDir({ prefix: 'client-test-chromium-' })
  const child = new Deno.Command(CHROMIUM, {
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      // Without these Chromium reaches for Google's services, which a closed network refuses.
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
      `--user-data-dir=${profile}`,
      `--remote-debugging-address=127.0.0.1`,
      `--remote-debugging-port=${debugPort}`,
      'about:blank',
    ],
    stdout: 'null',
    stderr: 'piped',
  }).spawn()
  // Kept for a failure message: why Chromium did not start or died.
  let stderr = ''
  const drain = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of child.stderr) stderr = (stderr + decoder.decode(chunk)).slice(-4000)
  })()
  let exited = false
  child.status.then(() => (exited = true))

  const cleanup = async () => {
    try {
      child.kill('SIGKILL')
    } catch { /* already gone */ }
    await child.status
    await drain.catch(() => {})
    await Deno.remove(profile, { recursive: true }).catch(() => {})
  }

  try {
    const pageWs = await pageTarget(debugPort, () => exited, () => stderr)
    const cdp = await Cdp.connect(pageWs)
    const log: PageLog = []
    cdp.on(
      'Runtime.consoleAPICalled',
      (p) =>
        log.push(`console.${p.type}: ${p.args.map((a: any) => a.value ?? a.description ?? '').join(' ')}`),
    )
    cdp.on(
      'Runtime.exceptionThrown',
      (p) => log.push(`uncaught: ${p.exceptionDetails.exception?.description ?? p.exceptionDetails.text}`),
    )
    cdp.on(
      'Log.entryAdded',
      (p) => log.push(`browser ${p.entry.level}: ${p.entry.text} ${p.entry.url ?? ''}`),
    )
    await cdp.send('Page.enable')
    await cdp.send('Runtime.enable')
    await cdp.send('Log.enable')

    const evaluate = async (expression: string) => {
      const r = await cdp.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true })
      if (r.exceptionDetails) {
        throw new Error(
          `in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`,
        )
      }
      return r.result.value
    }
    return {
      log,
      async goto(url) {
        const loaded = cdp.once('Page.loadEventFired', 20_000)
        const r = await cdp.send('Page.navigate', { url })
        if (r.errorText) throw new Error(`navigating to ${url}: ${r.errorText}`)
        await loaded
      },
      evaluate,
      async waitFor(expression, what, timeoutMs = 15_000) {
        const deadline = Date.now() + timeoutMs
        for (;;) {
          const v = await evaluate(expression)
          if (v) return v
          if (Date.now() > deadline) {
            throw new Error(`timed out waiting for ${what}\n${log.slice(-20).join('\n')}`)
          }
          await new Promise((r) => setTimeout(r, 100))
        }
      },
      async close() {
        // Browser.close ends Chromium and its helpers in order; the kill is the fallback.
        await cdp.send('Browser.close').catch(() => {})
        cdp.close()
        await Promise.race([child.status, new Promise((r) => setTimeout(r, 3000))])
        await cleanup()
      },
    }
  } catch (e) {
    await cleanup()
    throw e
  }
}

/** Waits for the DevTools endpoint and returns the WebSocket URL of Chromium's first page. */
async function pageTarget(port: number, exited: () => boolean, stderr: () => string): Promise<string> {
  const deadline = Date.now() + 20_000
  for (;;) {
    if (exited()) throw new Error(`Chromium exited at start:\n${stderr()}`)
    try {
      const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()
      const page = targets.find((t: any) => t.type === 'page')
      if (page) return page.webSocketDebuggerUrl
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      throw new Error(`Chromium's DevTools endpoint did not answer on ${port}:\n${stderr()}`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** A DevTools protocol connection: numbered commands, their replies, and events. */
class Cdp {
  #next = 1
  #pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>()
  #listeners = new Map<string, ((params: any) => void)[]>()
  private constructor(private ws: WebSocket) {
    ws.onmessage = (m) => {
      const msg = JSON.parse(m.data)
      if (msg.id !== undefined) {
        const p = this.#pending.get(msg.id)
        this.#pending.delete(msg.id)
        if (msg.error) p?.reject(new Error(`${msg.error.message} ${msg.error.data ?? ''}`))
        else p?.resolve(msg.result)
      } else for (const fn of this.#listeners.get(msg.method) ?? []) fn(msg.params)
    }
    ws.onclose = () => {
      for (const p of this.#pending.values()) p.reject(new Error('the DevTools connection closed'))
      this.#pending.clear()
    }
  }

  static connect(url: string): Promise<Cdp> {
    const ws = new WebSocket(url)
    return new Promise((resolve, reject) => {
      ws.onopen = () => resolve(new Cdp(ws))
      ws.onerror = (e) => reject(new Error(`DevTools connection: ${(e as ErrorEvent).message ?? e}`))
    })
  }

  send(method: string, params: Record<string, unknown> = {}): Promise<any> {
    const id = this.#next++
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject })
      this.ws.send(JSON.stringify({ id, method, params }))
    })
  }

  on(method: string, fn: (params: any) => void) {
    this.#listeners.set(method, [...(this.#listeners.get(method) ?? []), fn])
  }

  once(method: string, timeoutMs: number): Promise<any> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${method}`)), timeoutMs)
      const fn = (p: any) => {
        clearTimeout(timer)
        this.#listeners.set(method, (this.#listeners.get(method) ?? []).filter((f) => f !== fn))
        resolve(p)
      }
      this.on(method, fn)
    })
  }

  close() {
    this.ws.close()
  }
}

/** Serves files to the browser on http://localhost:<port>: `files` maps a path to its content
 *  and type. */
export function servePage(port: number, files: Record<string, { body: string; type: string }>) {
  const server = Deno.serve({ hostname: '127.0.0.1', port, onListen: () => {} }, (req) => {
    const file = files[new URL(req.url).pathname]
    if (!file) return new Response('not found', { status: 404 })
    return new Response(file.body, { headers: { 'content-type': file.type, 'cache-control': 'no-store' } })
  })
  return { origin: `http://localhost:${port}`, stop: () => server.shutdown() }
}
