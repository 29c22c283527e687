// The admin console (admin/) in headless Chromium: Debian's chromium driven by playwright-core
// with its executable path (no browser download), axe-core injected for accessibility, and a
// screenshot of every page checked, kept under test-artifacts/admin-console/.
import { strict as assert } from 'node:assert'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { ROOT } from '../scripts/lib/proc.ts'
import { API_URL, sql } from './_helpers.ts'
import { adminClient, freshEmail } from './_auth.ts'

export const CONSOLE_URL = `${API_URL}/dashboard/admin`
export const ARTIFACTS = `${ROOT}/test-artifacts/admin-console`
export const CONSOLE_PASSWORD = 'console-password-1234'
const CHROMIUM = Deno.env.get('CHROMIUM_BIN') ?? '/usr/bin/chromium'
const AXE = Deno.readTextFileSync(`${ROOT}/node_modules/axe-core/axe.min.js`)

export interface ConsoleUser {
  id: string
  email: string
  password: string
}

/** A confirmed user with a password (through Auth's admin API), a super admin unless `role` says. */
export async function consoleUser(role: 'super_admin' | 'user' = 'super_admin', prefix = 'console'): Promise<ConsoleUser> {
  const email = freshEmail(prefix)
  const { data, error } = await adminClient().auth.admin.createUser({
    email,
    password: CONSOLE_PASSWORD,
    email_confirm: true,
    user_metadata: { full_name: `${prefix} ${role}` },
  })
  if (error) throw error
  if (role === 'super_admin') await sql`update public.profiles set role = 'super_admin' where id = ${data.user.id}`
  return { id: data.user.id, email, password: CONSOLE_PASSWORD }
}

export interface Console {
  page: Page
  /** What the page logged: uncaught errors and console errors, shown when a step fails. */
  log: string[]
  /** Opens a console path (such as /dashboard/admin/health) and waits for the network to settle. */
  open(path: string): Promise<void>
  signIn(user: ConsoleUser): Promise<void>
  /** axe-core on the page as it is: no serious or critical violation. */
  checkAccessibility(name: string): Promise<void>
  /** A full-page screenshot kept as a test artifact. */
  screenshot(name: string): Promise<void>
  close(): Promise<void>
}

/** Starts Chromium with a new profile (time zone `timezoneId`, default America/New_York so
 *  times shown in the viewer's zone differ from UTC). */
export async function openConsole(o: { timezoneId?: string } = {}): Promise<Console> {
  try {
    Deno.statSync(CHROMIUM)
  } catch {
    throw new Error(`Chromium is missing (${CHROMIUM}): run \`bash scripts/bootstrap.sh\` as root`)
  }
  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--disable-dev-shm-usage',
      // Without these Chromium reaches for Google's services, which a closed network refuses.
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
  const context: BrowserContext = await browser.newContext({
    timezoneId: o.timezoneId ?? 'America/New_York',
    viewport: { width: 1280, height: 900 },
  })
  const page = await context.newPage()
  page.setDefaultTimeout(15_000)
  const log: string[] = []
  page.on('pageerror', (e) => log.push(`uncaught: ${e.message}`))
  page.on('console', (m) => m.type() === 'error' && log.push(`console.error: ${m.text()}`))
  await Deno.mkdir(ARTIFACTS, { recursive: true })
  return {
    page,
    log,
    async open(path) {
      await page.goto(`${API_URL}${path}`, { waitUntil: 'networkidle' })
    },
    async signIn(user) {
      await page.goto(CONSOLE_URL, { waitUntil: 'networkidle' })
      await page.getByLabel('E-mail').fill(user.email)
      await page.getByLabel('Password').fill(user.password)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('button', { name: 'Sign out' }).waitFor()
    },
    async checkAccessibility(name) {
      // Through the DevTools protocol: the console's CSP (no inline script, no eval) would refuse
      // an injected <script> or Playwright's own evaluate.
      const cdp = await context.newCDPSession(page)
      const r = await cdp.send('Runtime.evaluate', {
        expression: `${AXE}\n;axe.run(document, { resultTypes: ['violations'] })`,
        awaitPromise: true,
        returnByValue: true,
      })
      await cdp.detach()
      if (r.exceptionDetails) throw new Error(`axe-core: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`)
      const result: any = r.result.value
      const bad = result.violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
      assert.deepEqual(
        bad.map((v: any) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`),
        [],
        `axe-core on ${name}`,
      )
    },
    async screenshot(name) {
      await page.screenshot({ path: `${ARTIFACTS}/${name}.png`, fullPage: true })
    },
    async close() {
      await context.close().catch(() => {})
      await browser.close().catch(() => {})
    },
  }
}

/** Runs `steps` with a console, closing the browser whatever happens and adding the page's log
 *  to a failure. */
export async function withConsole(steps: (c: Console) => Promise<void>, o: { timezoneId?: string } = {}) {
  const c = await openConsole(o)
  try {
    await steps(c)
  } catch (e) {
    await c.screenshot(`failure-${Date.now()}`).catch(() => {})
    if (e instanceof Error && c.log.length) e.message += `\npage log:\n${c.log.slice(-20).join('\n')}`
    throw e
  } finally {
    await c.close()
  }
}
