// Every labs route (routes/labs/) and the impersonation routes: the credential each one asks
// for.
import { strict as assert } from 'node:assert'
import { api, assertError, createUser, test } from './_helpers.ts'
import { classroom } from './_labs.ts'

test('every labs and impersonation route with a credential refuses anonymous callers (401), and admin ones refuse users (403)', async () => {
  const doc = (await api('/api/openapi.json')).body
  const user = await createUser()
  let checked = 0
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    if (!/^\/api\/(labs|cron\/labs|admin\/impersonation)/.test(path)) continue
    const concrete = path.replace(/\{slug\}/g, 'some-slug').replace(/\{\w+\}/g, crypto.randomUUID())
    for (const [method, op] of Object.entries(ops)) {
      if (!op.security.length) continue
      const body = ['post', 'put', 'patch'].includes(method) ? {} : undefined
      assertError(await api(concrete, { method: method.toUpperCase(), body }), 401)
      if (String(op.description).includes("super admin's bearer token")) {
        for (const who of [user, classroom]) {
          const res = await api(concrete, { method: method.toUpperCase(), token: who.token, body })
          assert.ok(res.status === 403 || res.status === 400, `${method} ${path} as a user: ${res.status}`)
          if (res.status === 400) {
            assertError(
              await api(concrete, {
                method: method.toUpperCase(),
                token: who.token,
                body: validBodies[path] ?? {},
              }),
              403,
            )
          }
        }
      }
      checked++
    }
  }
  assert.ok(checked >= 30, `${checked} routes checked`)
})

/** A valid body per admin route, so a user's 403 is not hidden behind a 400. */
const validBodies: Record<string, unknown> = {
  '/api/labs/admin/sponsors/{id}/decline': { reason: 'x' },
  '/api/labs/admin/opportunities/{id}/decline': { reason: 'x' },
  '/api/labs/admin/videos/{id}/decline': { reason: 'x' },
  '/api/labs/admin/videos/{id}/feature': { is_featured: true },
  '/api/labs/admin/users/{id}/account-type': { account_type: 'classroom' },
  '/api/labs/admin/templates/{id}/promote-to-classroom': { min_grade_band: 'K-5' },
  '/api/labs/templates/{templateId}/golden-spec': {
    calculator: 'coil',
    optimal_inputs: {},
    calculator_outputs: { outputs: [{ label: 'f', value: 1, unit: 'Hz' }] },
  },
  '/api/labs/admin/competitions': { slug: 'x', title: 'x' },
  '/api/labs/admin/competitions/{slug}': { is_active: true },
  '/api/admin/impersonation': { user_id: crypto.randomUUID(), reason: 'x' },
}
