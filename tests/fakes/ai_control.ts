// Steering the fake AI provider (tests/fakes/ai.ts) from a test: a marker string the test puts
// into its own prompt (an entry's content or title) selects the scripted replies.
//   const marker = aiMarker()
//   await scriptAi(marker, [{ json: { primaryTone: 'joyful', tones: [...], confidence: 0.9 } }])
//   await postEntry(user, { title: 't', content: `a good day ${marker}` })
//   (await aiRequests(marker)).length   // what the provider was sent
import type { Reply } from './ai.ts'

export type { Reply }

function controlUrl() {
  const url = Deno.env.get('AI_FAKE_CONTROL_URL')
  if (!url) throw new Error('AI_FAKE_CONTROL_URL is not set: run the tests with `npm test`')
  return url
}

/** A fresh marker for one test (letters and digits only, so JSON never escapes it). */
export const aiMarker = () => `aimark${crypto.randomUUID().replaceAll('-', '')}`

export async function scriptAi(match: string, replies: Reply[]) {
  const res = await fetch(`${controlUrl()}/script`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ match, replies }),
  })
  if (!res.ok) throw new Error(`scripting the fake AI failed: ${res.status} ${await res.text()}`)
  await res.body?.cancel()
}

/** The requests the fake received whose body contained the marker. */
export async function aiRequests(match: string): Promise<{ path: string; body: any; at: string }[]> {
  const res = await fetch(`${controlUrl()}/requests?match=${encodeURIComponent(match)}`)
  if (!res.ok) throw new Error(`reading the fake AI's requests failed: ${res.status}`)
  return (await res.json()).requests
}

export async function forgetAi(match: string) {
  const res = await fetch(`${controlUrl()}/script?match=${encodeURIComponent(match)}`, { method: 'DELETE' })
  await res.body?.cancel()
}
