// A fake OpenAI-compatible server for tests: POST /v1/chat/completions and
// POST /v1/images/generations as OpenAI speaks them (bearer key, `usage`, OpenAI's error body
// {error: {message, type, param, code}}, 429 with Retry-After, slow answers). The production
// client (functions/_shared/ai.ts, the official SDK) talks to it through AI_BASE_URL.
//
// Without steering, it answers every request the same deterministic way:
//   chat    a value synthesized from the request's json_schema response format (enums: their
//           first value; numbers: 0.25 clamped into [minimum, maximum]; strings "fake";
//           arrays: one item; nullable: the non-null branch), so a tone analysis gets
//           confidence 0.25 and never sets a mood; plain text without a schema.
//           usage: prompt_tokens = ceil(characters of the messages / 4),
//           completion_tokens = ceil(characters of the answer / 4).
//   images  a 1024x1024 PNG (base64); GPT-image models also report usage (input_tokens =
//           ceil(prompt characters / 4), output_tokens by quality: low 272, medium/auto 1056,
//           high 4160), DALL·E models none.
//
// Steering (per test, keyed by a marker string the test puts into its own prompt, e.g. an
// entry's content or title, so test files running side by side never see each other's):
//   POST   /__control/script   {match: "<marker>", replies: [Reply, ...]}
//          Requests whose raw JSON body contains the marker get the replies in order; the last
//          one repeats. Reply fields (all optional):
//            status, error: {message, type, code}   an error answer (OpenAI's error body)
//            headers: {"retry-after": "1"}          extra response headers
//            delay_ms                                answer this much later (slow provider)
//            json                                    chat: the answer's content, as JSON
//            content                                 chat: the answer's raw content (e.g. "{oops")
//            refusal, finish_reason, model           chat: as OpenAI sends them
//            usage                                   chat {prompt_tokens, completion_tokens};
//                                                    images {input_tokens, output_tokens}
//            image: "png"|"jpeg"|"webp"|"garbage"|"none"|"url"|"huge"   images: what to send back
//                   (huge: a tiny PNG whose header declares 30000x30000)
//   GET    /__control/requests?match=<marker>   {requests: [{path, body, at}]} seen so far
//   DELETE /__control/script?match=<marker>      forget the script and the requests
// The key is `fake-ai-key`; any other bearer gets 401 invalid_api_key. The env it hands the
// stack also sets short deadlines (AI_TEXT_TIMEOUT_MS 3000, AI_IMAGE_TIMEOUT_MS 5000).
import { encode } from 'fast-png'

export const FAKE_AI_KEY = 'fake-ai-key'
/** The deadlines the test stack runs with (a slow reply must outlast these). */
export const TEST_TEXT_TIMEOUT_MS = 3000
export const TEST_IMAGE_TIMEOUT_MS = 5000

export interface Reply {
  status?: number
  error?: { message?: string; type?: string; code?: string | null }
  headers?: Record<string, string>
  delay_ms?: number
  json?: unknown
  content?: string
  refusal?: string
  finish_reason?: string
  model?: string
  usage?: {
    prompt_tokens?: number
    completion_tokens?: number
    input_tokens?: number
    output_tokens?: number
  }
  image?: 'png' | 'jpeg' | 'webp' | 'garbage' | 'none' | 'url' | 'huge'
}

interface Script {
  replies: Reply[]
  used: number
  requests: { path: string; body: unknown; at: string }[]
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })

const openAiError = (
  status: number,
  message: string,
  type: string,
  code: string | null = null,
  headers = {},
) => json(status, { error: { message, type, param: null, code } }, headers)

const tokens = (chars: number) => Math.ceil(chars / 4)

// ---- Values from a JSON schema (the strict response formats the SDK's zod helper makes).

type Schema = Record<string, any>

function resolve(schema: Schema, root: Schema): Schema {
  const ref = schema?.$ref as string | undefined
  if (!ref?.startsWith('#/')) return schema
  return ref.slice(2).split('/').reduce((s: any, k) => s?.[decodeURIComponent(k)], root) ?? {}
}

export function synthesize(schema: Schema, root: Schema = schema, depth = 0): unknown {
  schema = resolve(schema, root)
  if (depth > 20) return null
  if (schema.const !== undefined) return schema.const
  if (Array.isArray(schema.enum)) return schema.enum.find((v: unknown) => v !== null) ?? null
  const branches = schema.anyOf ?? schema.oneOf
  if (Array.isArray(branches)) {
    const pick = branches.find((b: Schema) => resolve(b, root).type !== 'null') ?? branches[0]
    return synthesize(pick, root, depth + 1)
  }
  let type = schema.type
  if (Array.isArray(type)) type = type.find((t: string) => t !== 'null') ?? 'null'
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {}
      for (const [k, v] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
        out[k] = synthesize(v, root, depth + 1)
      }
      return out
    }
    case 'array': {
      const n = Math.max(1, schema.minItems ?? 1)
      return Array.from({ length: n }, () => synthesize(schema.items ?? {}, root, depth + 1))
    }
    case 'number': {
      const lo = schema.minimum ?? -Infinity
      const hi = schema.maximum ?? Infinity
      return Math.min(hi, Math.max(lo, 0.25))
    }
    case 'integer':
      return schema.minimum ?? 0
    case 'boolean':
      return false
    case 'string':
      return 'fake'
    case 'null':
      return null
    default:
      return null
  }
}

// ---- Images

let png: Uint8Array | undefined
function pngBytes() {
  png ??= encode({ width: 1024, height: 1024, data: new Uint8Array(1024 * 1024 * 3).fill(200), channels: 3 })
  return png
}
/** A 1x1 PNG whose IHDR says 30000x30000 (its CRC left stale: it is judged by that header). */
function hugePng() {
  const bytes = encode({ width: 1, height: 1, data: new Uint8Array(3), channels: 3 })
  new DataView(bytes.buffer, bytes.byteOffset).setUint32(16, 30000)
  new DataView(bytes.buffer, bytes.byteOffset).setUint32(20, 30000)
  return bytes
}
const JPEG = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0, 1, 0xff, 0xd9])
const WEBP = new Uint8Array([
  ...new TextEncoder().encode('RIFF'),
  4,
  0,
  0,
  0,
  ...new TextEncoder().encode('WEBPVP8 '),
])
const b64 = (bytes: Uint8Array) => {
  let s = ''
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(s)
}
const OUTPUT_TOKENS: Record<string, number> = { low: 272, medium: 1056, auto: 1056, high: 4160 }

// ---- The server

export async function start(): Promise<{ env: Record<string, string>; stop(): Promise<void> }> {
  const scripts = new Map<string, Script>()
  let baseUrl = ''

  const scriptFor = (raw: string) => {
    for (const [match, script] of scripts) if (raw.includes(match)) return script
    return undefined
  }

  async function reply(r: Reply | undefined) {
    if (r?.delay_ms) await new Promise((res) => setTimeout(res, r.delay_ms))
    if (r?.status && r.status >= 400) {
      const type = r.status === 429
        ? 'rate_limit_exceeded'
        : r.status >= 500
        ? 'server_error'
        : 'invalid_request_error'
      return openAiError(
        r.status,
        r.error?.message ?? `fake error ${r.status}`,
        r.error?.type ?? type,
        r.error?.code ?? null,
        r.headers,
      )
    }
    return null
  }

  async function chat(body: any, r: Reply | undefined) {
    const error = await reply(r)
    if (error) return error
    const schema = body?.response_format?.type === 'json_schema'
      ? body.response_format.json_schema?.schema
      : undefined
    let content: string | null
    if (r?.content !== undefined) content = r.content
    else if (r?.json !== undefined) content = JSON.stringify(r.json)
    else content = schema ? JSON.stringify(synthesize(schema)) : 'fake answer'
    if (r?.refusal) content = null
    const promptChars = (body?.messages ?? []).reduce(
      (n: number, m: any) => n + String(m?.content ?? '').length,
      0,
    )
    return json(200, {
      id: `chatcmpl-fake-${crypto.randomUUID()}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: r?.model ?? body?.model ?? 'fake-model',
      choices: [{
        index: 0,
        message: { role: 'assistant', content, refusal: r?.refusal ?? null },
        finish_reason: r?.finish_reason ?? 'stop',
        logprobs: null,
      }],
      usage: {
        prompt_tokens: r?.usage?.prompt_tokens ?? tokens(promptChars),
        completion_tokens: r?.usage?.completion_tokens ?? tokens((content ?? '').length),
        total_tokens: (r?.usage?.prompt_tokens ?? tokens(promptChars)) +
          (r?.usage?.completion_tokens ?? tokens((content ?? '').length)),
      },
    }, r?.headers)
  }

  async function images(body: any, r: Reply | undefined) {
    const error = await reply(r)
    if (error) return error
    const model = String(body?.model ?? 'dall-e-3')
    const gptImage = /^gpt-image/.test(model)
    if (gptImage && body?.response_format) {
      return openAiError(
        400,
        `Unknown parameter: 'response_format'.`,
        'invalid_request_error',
        'unknown_parameter',
      )
    }
    const kind = r?.image ?? 'png'
    const bytes = kind === 'jpeg'
      ? JPEG
      : kind === 'webp'
      ? WEBP
      : kind === 'garbage'
      ? new TextEncoder().encode('not an image')
      : kind === 'huge'
      ? hugePng()
      : pngBytes()
    const data = kind === 'none'
      ? []
      : kind === 'url'
      ? [{ url: `${baseUrl}/__files/image.png` }]
      : [{ b64_json: b64(bytes) }]
    const input = r?.usage?.input_tokens ?? tokens(String(body?.prompt ?? '').length)
    const output = r?.usage?.output_tokens ?? OUTPUT_TOKENS[String(body?.quality ?? 'auto')] ?? 1056
    return json(200, {
      created: Math.floor(Date.now() / 1000),
      data,
      ...(gptImage
        ? {
          usage: {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input + output,
            input_tokens_details: { text_tokens: input, image_tokens: 0 },
          },
        }
        : {}),
    }, r?.headers)
  }

  async function control(req: Request, url: URL) {
    const match = url.searchParams.get('match') ?? ''
    if (req.method === 'POST' && url.pathname === '/__control/script') {
      const body = await req.json()
      if (typeof body?.match !== 'string' || body.match.length < 8 || !Array.isArray(body.replies)) {
        return json(400, { error: 'send {match: "<marker of at least 8 characters>", replies: [...]}' })
      }
      scripts.set(body.match, {
        replies: body.replies,
        used: 0,
        requests: scripts.get(body.match)?.requests ?? [],
      })
      return json(200, { ok: true })
    }
    if (req.method === 'GET' && url.pathname === '/__control/requests') {
      if (!match) return json(400, { error: 'match is required' })
      const seen = scripts.get(match)?.requests ??
        [...unscripted].filter((r) => r.raw.includes(match)).map((r) => r.entry)
      return json(200, { requests: seen })
    }
    if (req.method === 'DELETE' && url.pathname === '/__control/script') {
      scripts.delete(match)
      return json(200, { ok: true })
    }
    return json(404, { error: 'unknown control route' })
  }

  // Requests no script matched, kept (bounded) so a test can still ask what was sent.
  const unscripted: { raw: string; entry: { path: string; body: unknown; at: string } }[] = []

  const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url)
    if (url.pathname.startsWith('/__control/')) return control(req, url)
    if (url.pathname === '/__files/image.png') {
      return new Response(pngBytes() as Uint8Array<ArrayBuffer>, { headers: { 'content-type': 'image/png' } })
    }
    if (req.headers.get('authorization') !== `Bearer ${FAKE_AI_KEY}`) {
      return openAiError(401, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key')
    }
    const raw = await req.text()
    let body: any
    try {
      body = JSON.parse(raw)
    } catch {
      return openAiError(400, 'We could not parse the JSON body of your request.', 'invalid_request_error')
    }
    const script = scriptFor(raw)
    const entry = { path: url.pathname, body, at: new Date().toISOString() }
    let r: Reply | undefined
    if (script) {
      script.requests.push(entry)
      r = script.replies[Math.min(script.used, script.replies.length - 1)]
      script.used++
    } else {
      unscripted.push({ raw, entry })
      if (unscripted.length > 300) unscripted.shift()
    }
    if (req.method === 'POST' && url.pathname === '/v1/chat/completions') return chat(body, r)
    if (req.method === 'POST' && url.pathname === '/v1/images/generations') return images(body, r)
    return openAiError(404, `Invalid URL (${req.method} ${url.pathname})`, 'invalid_request_error')
  })
  baseUrl = `http://127.0.0.1:${server.addr.port}`
  return {
    env: {
      AI_API_KEY: FAKE_AI_KEY,
      AI_BASE_URL: `${baseUrl}/v1`,
      AI_FAKE_CONTROL_URL: `${baseUrl}/__control`,
      // Short deadlines, so a test of a slow provider waits seconds, not the production 10/60.
      AI_TEXT_TIMEOUT_MS: String(TEST_TEXT_TIMEOUT_MS),
      AI_IMAGE_TIMEOUT_MS: String(TEST_IMAGE_TIMEOUT_MS),
    },
    stop: () => server.shutdown(),
  }
}
