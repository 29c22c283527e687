// Each edge function bundles as `supabase functions deploy` bundles it: its entrypoint with only
// its own import map (supabase/config.toml's `import_map`), with no package.json or root deno.json
// to fall back on, within hosted's 20 MB bundle limit; and no map drifts from the root deno.json.
import { strict as assert } from 'node:assert'
import { test } from './_helpers.ts'

const ROOT = new URL('..', import.meta.url).pathname
const HOSTED_BUNDLE_LIMIT = 20 * 1024 * 1024

/** The functions of supabase/config.toml, with paths relative to the project root. */
function configuredFunctions() {
  const toml = Deno.readTextFileSync(`${ROOT}/supabase/config.toml`)
  const found: { name: string; entrypoint: string; importMap: string }[] = []
  for (const m of toml.matchAll(/^\[functions\.([\w-]+)\]\n([\s\S]*?)(?=^\[|(?![\s\S]))/gm)) {
    const value = (key: string) => m[2].match(new RegExp(`^${key}\\s*=\\s*"([^"]+)"`, 'm'))?.[1]
    const entrypoint = value('entrypoint')
    const importMap = value('import_map')
    assert.ok(entrypoint && importMap, `[functions.${m[1]}] names its entrypoint and import_map`)
    const fromRoot = (p: string) => p.replace(/^\.\.\//, '')
    found.push({ name: m[1], entrypoint: fromRoot(entrypoint), importMap: fromRoot(importMap) })
  }
  return found
}

/** A copy of functions/ alone, where nothing but a function's own map can resolve an import. */
async function isolatedCopy() {
  const dir = await Deno.makeTempDir({ prefix: 'bundle-' })
  const cp = await new Deno.Command('cp', { args: ['-r', `${ROOT}/functions`, dir] }).output()
  assert.ok(cp.success, 'copied functions/')
  return dir
}

async function bundle(dir: string, entrypoint: string, importMap: string) {
  const out = `${dir}/${entrypoint.replaceAll('/', '_')}.js`
  const res = await new Deno.Command(Deno.execPath(), {
    args: ['bundle', '--quiet', '--config', importMap, entrypoint, '-o', out],
    cwd: dir,
    stdout: 'piped',
    stderr: 'piped',
  }).output()
  const log = new TextDecoder().decode(res.stderr)
  return { ok: res.success, log, bytes: res.success ? (await Deno.stat(out)).size : 0 }
}

test('functions: each bundles with only its own import map, under 20 MB', async () => {
  const functions = configuredFunctions()
  assert.deepEqual(functions.map((f) => f.name).sort(), ['api', 'health'])
  const dir = await isolatedCopy()
  try {
    for (const f of functions) {
      const { ok, log, bytes } = await bundle(dir, f.entrypoint, f.importMap)
      assert.ok(ok, `${f.name} bundles with ${f.importMap} alone:\n${log}`)
      console.log(`  ${f.name}: ${(bytes / 1024 / 1024).toFixed(2)} MB bundled (hosted's limit 20 MB)`)
      assert.ok(bytes > 0 && bytes < HOSTED_BUNDLE_LIMIT, `${f.name}: ${bytes} bytes`)
    }
    // The check can fail: without @zip.js/zip.js in its map, the api does not bundle.
    const api = functions.find((f) => f.name === 'api')!
    const map = JSON.parse(await Deno.readTextFile(`${dir}/${api.importMap}`))
    delete map.imports['@zip.js/zip.js']
    await Deno.writeTextFile(`${dir}/${api.importMap}`, JSON.stringify(map))
    const missing = await bundle(dir, api.entrypoint, api.importMap)
    assert.equal(missing.ok, false)
    assert.match(missing.log, /@zip\.js\/zip\.js/)
  } finally {
    await Deno.remove(dir, { recursive: true })
  }
})

test("functions: every entry of a function's import map is the root deno.json's, version for version", async () => {
  const root = JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`)).imports as Record<string, string>
  for (const f of configuredFunctions()) {
    const own = JSON.parse(await Deno.readTextFile(`${ROOT}/${f.importMap}`)).imports as Record<string, string>
    for (const [name, target] of Object.entries(own)) {
      assert.equal(target, root[name], `${f.importMap}: "${name}" is "${root[name]}" in deno.json`)
    }
  }
})
