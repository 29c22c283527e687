// What the labs tests (tests/labs_*_test.ts) share: a super admin and a classroom account, made
// once; raw PostgREST calls; the cron credentials; sponsors and templates ready for a test.
import { strict as assert } from 'node:assert'
import { ANON_KEY, api, API_URL, createUser, env, type TestUser } from './_helpers.ts'

export const admin = await createUser({ superAdmin: true, prefix: 'labs-admin' })
export const classroom = await createUser({ prefix: 'labs-classroom' })
assert.equal(
  (await api(`/api/labs/admin/users/${classroom.id}/account-type`, {
    method: 'PUT',
    token: admin.token,
    body: { account_type: 'classroom' },
  })).status,
  200,
)

export const frontendCron = () => ({ authorization: `Bearer ${env('CRON_SECRET')}` })

/** A raw PostgREST call (anonymous unless a token is given): status, text, parsed body, headers. */
export async function rest(
  path: string,
  o: { token?: string; method?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } =
    {},
) {
  const body = o.rawBody ?? (o.body === undefined ? undefined : JSON.stringify(o.body))
  const res = await fetch(`${API_URL}/rest/v1/${path}`, {
    method: o.method ?? (body === undefined ? 'GET' : 'POST'),
    headers: {
      apikey: ANON_KEY,
      authorization: `Bearer ${o.token ?? ANON_KEY}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...o.headers,
    },
    body,
  })
  const text = await res.text()
  let parsed: any = null
  try {
    parsed = text ? JSON.parse(text) : null
  } catch { /* not JSON */ }
  return { status: res.status, text, body: parsed, headers: res.headers }
}
export const labsCron = () => ({ 'x-cron-secret': env('LABS_CRON_SECRET') })

export async function submitSponsor(
  user: TestUser,
  name = `Sponsor ${crypto.randomUUID().slice(0, 6)}`,
  contactEmail = 'Ada@Example.org',
) {
  const res = await api('/api/labs/sponsors', {
    token: user.token,
    body: { name, tier: 'gold', contact_email: contactEmail, contact_name: 'Ada Lovelace' },
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return res.body.sponsor
}

export async function approvedSponsor(owner: TestUser, contactEmail?: string) {
  const s = await submitSponsor(owner, undefined, contactEmail)
  assert.equal(
    (await api(`/api/labs/admin/sponsors/${s.id}/approve`, { method: 'POST', token: admin.token })).status,
    200,
  )
  return s
}

export async function publicTemplate(owner: TestUser, title = 'Tesla coil') {
  const res = await api('/api/labs/templates', {
    token: owner.token,
    body: { title, calculator: 'resonance', inputs: { inductance_h: 0.001 }, is_public: true },
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.equal(res.body.template.safety_level, 'adult_only')
  return res.body.template
}

export async function withGoldenSpec(t: { id: string }, value: number) {
  const res = await api(`/api/labs/templates/${t.id}/golden-spec`, {
    token: admin.token,
    body: {
      calculator: 'resonance',
      optimal_inputs: {},
      calculator_outputs: { outputs: [{ label: 'Q', value, unit: '' }] },
    },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
}

const point = (values: Record<string, number>) =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [k, { min: v, max: v, steps: 1 }]))
export async function single(calculator: string, values: Record<string, number>) {
  const res = await api('/api/labs/optimize', { body: { calculator, top_n: 1, ranges: point(values) } })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.combinations, 1)
  return res.body.results[0]
}
