// What the AI job tests share (chat_test.ts: note analysis; encouragement_jobs_test.ts: the
// assistant's daily drop): calling a job until it drains, opting users in, what they cost.
import { strict as assert } from 'node:assert'
import { api, env, sql, type TestUser } from './_helpers.ts'

export const dropsCron = () => ({ 'x-cron-secret': env('DROPS_CRON_SECRET') })

/** Calls a job until nothing remains (as pg_cron's continuation does); returns every reply. */
export async function drain(path: string, headers: Record<string, string>) {
  const replies = []
  for (let i = 0; i < 20; i++) {
    const res = await api(path, { method: 'POST', headers })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    replies.push(res.body)
    if (res.body.results.remaining === 0) return replies
  }
  throw new Error(`${path} did not drain`)
}

export const sum = (replies: any[], key: string) => replies.reduce((n, r) => n + r.results[key], 0)

export async function optIn(u: TestUser, checkIn = false) {
  await sql`update public.profiles set read_notes_enabled = true, check_in_enabled = ${checkIn} where id = ${u.id}`
}

export const analysis = (summary: string) => ({
  summary,
  mood_trends: { dominant_mood: 'hopeful', trend: 'improving', moods: [{ mood: 'hopeful', count: 3 }] },
  topics: ['running', 'family'],
  patterns: ['writes in the morning'],
  recommendations: ['keep the morning run'],
  insights: { gratitude: ['sister'], challenges: ['sleep'], goals: ['10k'], achievements: ['5k done'] },
})

export const usage = async (u: TestUser, type: string) =>
  (await sql`select count(*)::int as n from public.ai_usage where user_id = ${u.id} and usage_type = ${type}`)[
    0
  ].n
