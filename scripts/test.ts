// npm test: a throw-away stack on other ports, then every suite (deno check, pgTAP, Deno
// tests), then teardown. The last line is `N passed, N failed`.
import { exportJWK, generateKeyPair } from 'jose'
import { loadAuthConfig } from './lib/auth/config.ts'
import { CLIENT_TEST, TEST } from './lib/ports.ts'
import { ROOT, run, StackError } from './lib/proc.ts'
import { startStack } from './lib/stack.ts'
import { raiseWriteLimitsForLoad } from './lib/write_limits.ts'

// Which tests run. Every test file is named after the area it tests: tests/<area>_test.ts or
// tests/<area>_<part>_test.ts, supabase/tests/<area>.test.sql or <area>_<part>.test.sql (helpers
// start with `_`: tests/_<name>.ts, and supabase/tests/_helpers.sql, which a pgTAP file includes
// with `\ir _helpers.sql`). `npm test -- workout labs` runs the areas named (a word matches a
// file whose name starts with the word and then `_` or `.`, so `workout_checkin` names a part);
// TEST_ONLY=checkin,labs runs the files whose names contain a word anywhere. Either way `check`
// adds `deno check`, which otherwise runs only when nothing is filtered. CI and a bare
// `npm test` run everything.
const areas = Deno.args.map((w) => w.trim()).filter(Boolean)
const only = (Deno.env.get('TEST_ONLY') ?? '').split(',').map((w) => w.trim()).filter(Boolean)
const filtered = areas.length > 0 || only.length > 0
const inArea = (name: string, area: string) => name.startsWith(`${area}_`) || name.startsWith(`${area}.`)
const chosen = (name: string) => !filtered || areas.some((a) => inArea(name, a)) || only.some((w) => name.includes(w))
const runCheck = !filtered || areas.includes('check') || only.includes('check')

const pgFiles = [...Deno.readDirSync(`${ROOT}/supabase/tests`)].map((e) => e.name).filter((n) => n.endsWith('.test.sql') && chosen(n)).sort()
const denoTestFiles = [...Deno.readDirSync(`${ROOT}/tests`)].map((e) => e.name).filter((n) => n.endsWith('_test.ts') && chosen(n)).sort()
// A file outside the convention would never run, and a word that names no file is a typo, not
// an empty area: say so before starting anything.
const stray = [
  ...[...Deno.readDirSync(`${ROOT}/tests`)].filter((e) => e.isFile && !e.name.startsWith('_') && !e.name.endsWith('_test.ts')).map((e) => `tests/${e.name}`),
  ...[...Deno.readDirSync(`${ROOT}/supabase/tests`)].filter((e) => !e.name.startsWith('_') && !e.name.endsWith('.test.sql')).map((e) => `supabase/tests/${e.name}`),
]
if (stray.length) {
  console.error(`Not named as a test or a helper (<area>_test.ts, <area>_<part>_test.ts, _<helper>.ts, <area>.test.sql, _<helper>.sql): ${stray.join(', ')}`)
  console.log('0 passed, 1 failed')
  Deno.exit(1)
}
const unknown = [...areas, ...only].filter((w) =>
  w !== 'check' && ![...pgFiles, ...denoTestFiles].some((n) => areas.includes(w) ? inArea(n, w) : n.includes(w))
)
if (unknown.length) {
  console.error(`No test file for: ${unknown.join(', ')} (an area is a file name's start up to \`_\` or \`.\`, in tests/ or supabase/tests/)`)
  console.log('0 passed, 1 failed')
  Deno.exit(1)
}

let passed = 0
let failed = 0
const failures: string[] = []
const count = (ok: boolean, name: string) => {
  if (ok) passed++
  else {
    failed++
    failures.push(name)
  }
}

/** Runs a command, echoing its output, and returns it with the exit status. */
async function runShown(cmd: string, args: string[], env: Record<string, string> = {}) {
  const child = new Deno.Command(cmd, { args, env, cwd: ROOT, stdout: 'piped', stderr: 'piped' }).spawn()
  let text = ''
  const decoder = new TextDecoder()
  const pump = async (stream: ReadableStream<Uint8Array>, sink: typeof Deno.stdout) => {
    for await (const chunk of stream) {
      text += decoder.decode(chunk)
      await sink.write(chunk)
    }
  }
  const [status] = await Promise.all([child.status, pump(child.stdout, Deno.stdout), pump(child.stderr, Deno.stderr)])
  return { ok: status.success, text }
}

/** Counts TAP results; a suite that failed without a failing assertion counts once more. */
function countTap(suite: string, out: { ok: boolean; text: string }) {
  let bad = 0
  for (const line of out.text.split('\n')) {
    const m = line.match(/^\s*(not ok|ok)\s+\d+\s*-?\s*(.*)$/)
    if (!m || /# skip/i.test(line)) continue
    if (m[1] === 'ok') count(true, '')
    else {
      bad++
      count(false, `${suite}: ${m[2]}`)
    }
  }
  if (!out.ok && bad === 0) count(false, `${suite} (did not finish cleanly)`)
}

// A local JWKS server, so ES256 tokens are verified the way newer Supabase projects issue them.
const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true })
const publicJwk = { ...(await exportJWK(publicKey)), kid: 'test-es256', alg: 'ES256', use: 'sig' }
const jwksServer = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen: () => {} }, () => Response.json({ keys: [publicJwk] }))
const jwksUrl = `http://127.0.0.1:${jwksServer.addr.port}/auth/v1/.well-known/jwks.json`

// Small servers that speak each external provider's HTTP protocol (tests/fakes/*.ts, each
// exporting start()); the env they return points the edge functions at them.
const fakes: { name: string; stop(): Promise<void> }[] = []
const fakeEnv: Record<string, string> = {}
for (const f of [...Deno.readDirSync(`${ROOT}/tests/fakes`)].map((e) => e.name).filter((n) => n.endsWith('.ts')).sort()) {
  const mod = await import(`${ROOT}/tests/fakes/${f}`)
  if (typeof mod.start !== 'function') continue
  const started = await mod.start()
  Object.assign(fakeEnv, started.env)
  fakes.push({ name: f, stop: started.stop })
}

const dataDir = await Deno.makeTempDir({ prefix: 'journal-test-stack-' })
await Deno.chmod(dataDir, 0o755)
console.log(`Starting a throw-away stack in ${dataDir}`)
let stack
try {
  // Auth may redirect to config.toml's URLs and to the client tests' page (tests/client_*).
  const allowList = [...(await loadAuthConfig()).additionalRedirectUrls, `http://localhost:${CLIENT_TEST.pagePort}/**`]
  stack = await startStack({
    ...TEST,
    dataDir,
    throwaway: true,
    env: { JWKS_URL: jwksUrl, GOTRUE_EXTERNAL_ANONYMOUS_USERS_ENABLED: 'true', GOTRUE_URI_ALLOW_LIST: allowList.join(','), ...fakeEnv },
    log: (s) => console.log(`  ${s}`),
  })
  await raiseWriteLimitsForLoad(stack.dbUrl)
} catch (e) {
  console.error(e instanceof StackError ? e.message : e)
  console.log('0 passed, 1 failed')
  Deno.exit(1)
}

try {
  console.log('\n== deno check (functions, scripts, tests) and tsc (the admin console)')
  if (runCheck) {
    const check = await runShown(`${ROOT}/node_modules/.bin/deno`, ['check', 'functions/', 'scripts/', 'tests/'])
    count(check.ok, 'deno check')
    const tsc = await runShown(`${ROOT}/node_modules/.bin/tsc`, ['-p', 'admin'])
    count(tsc.ok, 'tsc -p admin')
  }

  console.log('\n== pgTAP (supabase/tests)')
  for (const f of pgFiles) {
    const out = await runShown('pg_prove', ['--verbose', '-h', '127.0.0.1', '-p', String(TEST.dbPort), '-U', 'postgres', '-d', 'postgres', `supabase/tests/${f}`], { PGPASSWORD: 'postgres' })
    countTap(f, out)
  }

  console.log('\n== Deno tests (tests/)')
  const privateJwk = { ...(await exportJWK(privateKey)), kid: 'test-es256', alg: 'ES256' }
  const denoFiles = filtered ? denoTestFiles.map((n) => `tests/${n}`) : ['tests/']
  if (denoFiles.length) {
    const denoOut = await runShown(`${ROOT}/node_modules/.bin/deno`, ['test', '-A', '--reporter=tap', ...denoFiles], {
      ...stack.functionEnv,
      TEST_ES256_PRIVATE_JWK: JSON.stringify(privateJwk),
      TEST_DB_PORT: String(TEST.dbPort),
    })
    countTap('deno test', denoOut)
  }
} finally {
  await stack.stop()
  await jwksServer.shutdown()
  for (const f of fakes) await f.stop().catch((e) => console.error(`stopping ${f.name}:`, e))
  if (Deno.uid() === 0) await run('rm', ['-rf', dataDir]).catch(() => {})
  else await Deno.remove(dataDir, { recursive: true }).catch(() => {})
}

if (failures.length) console.log(`\nFailed:\n${failures.map((f) => `  - ${f}`).join('\n')}`)
console.log(`\n${passed} passed, ${failed} failed`)
Deno.exit(failed ? 1 : 0)
