// The AI provider: any OpenAI-compatible server (OpenAI, Ollama, vLLM, LM Studio) through the
// official `openai` SDK. Configuration:
//   AI_API_KEY        without it, every AI feature is skipped (aiConfig() is null)
//   AI_BASE_URL       the server (default: OpenAI's)
//   AI_TEXT_MODEL     default gpt-4o-mini;  AI_IMAGE_MODEL  default gpt-image-1
//   AI_TEXT_TIMEOUT_MS  per text call, at most 10000 (default 10000)
//   AI_IMAGE_TIMEOUT_MS per image call (default 60000: image models take tens of seconds)
// Every call has a deadline that covers its retries, so nothing waits on the SDK's defaults
// (10 minutes, two retries, Retry-After honoured up to 60 s). Retries are ours: at most one,
// only for a failure the provider calls transient (429, 408, 409, 5xx, a dropped connection),
// and only when the wait still fits in the deadline.
//
// Failures are AiError with a kind the routes map to a status; an answer the provider billed
// but we could not use (malformed, off-schema, refused) carries its usage, so it is recorded.
import OpenAI from 'openai'
import { zodResponseFormat } from 'openai/helpers/zod'
import type { z } from '@hono/zod-openapi'
import { optionalEnv } from './env.ts'
import { HttpError } from './errors.ts'
import { sniffImageType } from './image_frames.ts'

export const TEXT_TIMEOUT_MAX_MS = 10_000

export interface AiConfig {
  apiKey: string
  baseURL?: string
  textModel: string
  imageModel: string
  textTimeoutMs: number
  imageTimeoutMs: number
}

function positiveInt(name: string, fallback: number, max = Number.MAX_SAFE_INTEGER) {
  const n = Number(optionalEnv(name) ?? fallback)
  return Number.isFinite(n) && n > 0 ? Math.min(Math.floor(n), max) : fallback
}

/** The configuration, read now (never cached: tests and deployments change it), or null without a key. */
export function aiConfig(): AiConfig | null {
  const apiKey = optionalEnv('AI_API_KEY')
  if (!apiKey) return null
  return {
    apiKey,
    baseURL: optionalEnv('AI_BASE_URL'),
    textModel: optionalEnv('AI_TEXT_MODEL') ?? 'gpt-4o-mini',
    imageModel: optionalEnv('AI_IMAGE_MODEL') ?? 'gpt-image-1',
    textTimeoutMs: positiveInt('AI_TEXT_TIMEOUT_MS', TEXT_TIMEOUT_MAX_MS, TEXT_TIMEOUT_MAX_MS),
    imageTimeoutMs: positiveInt('AI_IMAGE_TIMEOUT_MS', 60_000),
  }
}

// One SDK client per configuration (the client keeps no per-request state).
let cached: { key: string; client: OpenAI } | undefined
function clientFor(cfg: AiConfig): OpenAI {
  const key = `${cfg.apiKey}\n${cfg.baseURL ?? ''}`
  if (cached?.key !== key) {
    cached = {
      key,
      client: new OpenAI({
        apiKey: cfg.apiKey,
        baseURL: cfg.baseURL,
        maxRetries: 0,
        timeout: cfg.textTimeoutMs,
      }),
    }
  }
  return cached.client
}

/** Tokens a text call used (chat replies say prompt_tokens/completion_tokens). */
export interface TextUsage {
  model: string
  inputTokens: number
  outputTokens: number
}

/** What an image call used: GPT-image models report tokens, DALL·E models bill per image. */
export interface ImageUsage extends TextUsage {
  imageCount: number
  quality: ImageQuality
}

export type ImageQuality = 'standard' | 'hd'

export type AiFailure =
  | 'not_configured' // no AI_API_KEY
  | 'timeout' // the deadline passed
  | 'rate_limited' // the provider said 429 (also after our one retry)
  | 'provider' // any other provider or connection error
  | 'invalid_answer' // a reply we cannot use: malformed, off-schema, refused, cut short

export class AiError extends Error {
  constructor(
    readonly kind: AiFailure,
    message: string,
    /** Set when the provider billed the call although it failed (record it). */
    readonly usage?: TextUsage | ImageUsage,
    readonly providerStatus?: number,
  ) {
    super(message)
  }
}

export function notConfigured() {
  return new AiError('not_configured', 'AI is not configured on this server (AI_API_KEY is not set)')
}

/** Options every call takes. */
export interface CallOptions {
  /** The whole call's budget in ms, retries included (defaults to the configured timeout). */
  deadlineMs?: number
  /** At most this many retries of a transient failure (0 or 1; default 1). */
  retries?: 0 | 1
  /** Cancels the call (for example when the write it belongs to failed). */
  signal?: AbortSignal
}

const TRANSIENT = new Set([408, 409, 429])
const isTransient = (status: number | undefined) =>
  status !== undefined && (TRANSIENT.has(status) || status >= 500)

/** How long the provider asked us to wait before retrying (ms), or a short backoff. */
function retryDelay(e: unknown): number {
  const headers = e instanceof OpenAI.APIError ? e.headers : undefined
  const ms = Number(headers?.get('retry-after-ms'))
  if (Number.isFinite(ms) && ms >= 0 && headers?.get('retry-after-ms')) return ms
  const s = Number(headers?.get('retry-after'))
  if (Number.isFinite(s) && s >= 0 && headers?.get('retry-after')) return s * 1000
  return 250
}

function sleep(ms: number, signal: AbortSignal) {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const t = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => {
      clearTimeout(t)
      reject(signal.reason)
    }, { once: true })
  })
}

/** Maps whatever the SDK threw to an AiError. */
function asAiError(e: unknown, deadline: AbortSignal, caller?: AbortSignal): AiError {
  if (e instanceof AiError) return e
  if (caller?.aborted) return new AiError('provider', 'the AI call was cancelled')
  if (deadline.aborted || e instanceof OpenAI.APIConnectionTimeoutError) {
    return new AiError('timeout', 'the AI provider did not answer in time')
  }
  if (e instanceof OpenAI.APIError && e.status === 429) {
    return new AiError('rate_limited', 'the AI provider is rate limiting requests', undefined, 429)
  }
  if (e instanceof OpenAI.APIError && e.status) {
    return new AiError('provider', `the AI provider answered ${e.status}: ${e.message}`, undefined, e.status)
  }
  return new AiError('provider', `the AI provider could not be reached: ${(e as Error)?.message ?? e}`)
}

/**
 * Runs one provider request under a deadline, retrying a transient failure at most once when
 * the wait fits in what remains of the deadline.
 */
async function withDeadline<T>(
  o: CallOptions,
  defaultMs: number,
  attempt: (signal: AbortSignal, remainingMs: number) => Promise<T>,
): Promise<T> {
  const budget = Math.max(1, o.deadlineMs ?? defaultMs)
  const deadline = AbortSignal.timeout(budget)
  const signal = o.signal ? AbortSignal.any([deadline, o.signal]) : deadline
  const endsAt = Date.now() + budget
  let retries = o.retries ?? 1
  for (;;) {
    try {
      return await attempt(signal, Math.max(1, endsAt - Date.now()))
    } catch (e) {
      const status = e instanceof OpenAI.APIError ? e.status : undefined
      const connectionDropped = e instanceof OpenAI.APIConnectionError &&
        !(e instanceof OpenAI.APIConnectionTimeoutError)
      const wait = retryDelay(e)
      // A retry needs the wait plus a little time for the answer itself.
      const fits = Date.now() + wait + 200 < endsAt
      if (retries > 0 && !signal.aborted && (isTransient(status) || connectionDropped) && fits) {
        retries--
        try {
          await sleep(wait, signal)
        } catch {
          throw asAiError(e, deadline, o.signal)
        }
        continue
      }
      throw asAiError(e, deadline, o.signal)
    }
  }
}

export interface StructuredRequest<S extends z.ZodType> {
  /** The answer's shape: sent as a strict JSON schema (nullable, never optional, fields) and re-checked. */
  schema: S
  /** The schema's name as the model sees it. */
  name: string
  system: string
  user: string
}

/**
 * A chat completion whose answer must match `schema`. The schema is sent as a strict
 * response format, and the reply is validated again with zod: OpenAI-compatible servers do
 * not all enforce it. A reply that is not JSON, does not match, is refused or cut short is an
 * 'invalid_answer' AiError carrying the (billed) usage.
 */
export async function structuredCompletion<S extends z.ZodType>(
  req: StructuredRequest<S>,
  o: CallOptions = {},
): Promise<{ value: z.infer<S>; usage: TextUsage }> {
  const cfg = aiConfig()
  if (!cfg) throw notConfigured()
  const client = clientFor(cfg)
  const completion = await withDeadline(
    o,
    cfg.textTimeoutMs,
    (signal, remainingMs) =>
      client.chat.completions.create({
        model: cfg.textModel,
        messages: [{ role: 'system', content: req.system }, { role: 'user', content: req.user }],
        response_format: zodResponseFormat(req.schema, req.name),
      }, { signal, timeout: remainingMs, maxRetries: 0 }),
  )
  const usage: TextUsage = {
    model: cfg.textModel, // what we asked for (replies name dated snapshots), so prices match
    inputTokens: completion.usage?.prompt_tokens ?? 0,
    outputTokens: completion.usage?.completion_tokens ?? 0,
  }
  const choice = completion.choices?.[0]
  const invalid = (why: string) => new AiError('invalid_answer', `the AI answer was unusable: ${why}`, usage)
  if (!choice) throw invalid('no choices')
  if (choice.message?.refusal) throw invalid(`refused (${choice.message.refusal.slice(0, 200)})`)
  if (choice.finish_reason === 'length') throw invalid('cut short (length)')
  let parsed: unknown
  try {
    parsed = JSON.parse(choice.message?.content ?? '')
  } catch {
    throw invalid('not JSON')
  }
  const checked = req.schema.safeParse(parsed)
  if (!checked.success) {
    const issue = checked.error.issues[0]
    throw invalid(`${issue.path.join('.') || 'answer'}: ${issue.message}`)
  }
  return { value: checked.data, usage }
}

const MAX_IMAGE_BYTES = 5 * 1024 * 1024

/** The image type by its magic bytes (what the storage bucket accepts: no GIF), or null. */
export function imageType(bytes: Uint8Array): 'image/png' | 'image/jpeg' | 'image/webp' | null {
  const type = sniffImageType(bytes)
  return type === 'image/gif' ? null : type
}

const isGptImage = (model: string) => /^gpt-image/i.test(model)
const isDalle = (model: string) => /^dall-e/i.test(model)

/** Our two qualities in each model family's words. */
function qualityParam(model: string, quality: ImageQuality) {
  if (isGptImage(model)) return { quality: quality === 'hd' ? 'high' as const : 'medium' as const }
  if (/^dall-e-3/i.test(model)) return { quality: quality }
  return {}
}

export interface ImageRequest {
  prompt: string
  quality?: ImageQuality
  /** Square 1024 unless said otherwise. */
  size?: '1024x1024' | '1536x1024' | '1024x1536'
}

/**
 * One generated image (AI_IMAGE_MODEL) as bytes, with its type and usage. GPT-image models
 * always answer base64 and report input/output tokens; DALL·E models are asked for base64 and
 * billed per image. Images are not retried unless asked (they are slow and cost more).
 */
export async function generateImage(
  req: ImageRequest,
  o: CallOptions = {},
): Promise<{ bytes: Uint8Array; contentType: 'image/png' | 'image/jpeg' | 'image/webp'; usage: ImageUsage }> {
  const cfg = aiConfig()
  if (!cfg) throw notConfigured()
  const client = clientFor(cfg)
  const quality = req.quality ?? 'standard'
  const model = cfg.imageModel
  const result = await withDeadline({ retries: 0, ...o }, cfg.imageTimeoutMs, async (signal, remainingMs) => {
    const reply = await client.images.generate({
      model,
      prompt: req.prompt,
      n: 1,
      size: req.size ?? '1024x1024',
      ...qualityParam(model, quality),
      ...(isGptImage(model)
        ? { output_format: 'png' as const }
        : isDalle(model)
        ? { response_format: 'b64_json' as const }
        : {}),
    }, { signal, timeout: remainingMs, maxRetries: 0 })
    const usage: ImageUsage = {
      model,
      inputTokens: reply.usage?.input_tokens ?? 0,
      outputTokens: reply.usage?.output_tokens ?? 0,
      imageCount: reply.data?.length ? 1 : 0,
      quality,
    }
    const item = reply.data?.[0]
    let bytes: Uint8Array | undefined
    if (item?.b64_json) bytes = Uint8Array.from(atob(item.b64_json), (ch) => ch.charCodeAt(0))
    else if (item?.url) {
      // Some compatible servers answer with a URL only; fetch it under the same deadline.
      const res = await fetch(item.url, { signal })
      if (res.ok) bytes = new Uint8Array(await res.arrayBuffer())
      else await res.body?.cancel()
    }
    return { bytes, usage }
  })
  const { bytes, usage } = result
  const invalid = (why: string) =>
    new AiError('invalid_answer', `the generated image was unusable: ${why}`, usage)
  if (!bytes) throw invalid('no image in the answer')
  if (bytes.length > MAX_IMAGE_BYTES) throw invalid('larger than 5 MB')
  const contentType = imageType(bytes)
  if (!contentType) throw invalid('not a PNG, JPEG or WEBP image')
  return { bytes, contentType, usage }
}

/**
 * The HTTP answer for a failed AI call on an endpoint that exists to make one: 503 when AI is
 * not configured or the provider is rate limiting, 504 when it did not answer in time, 502 for
 * any other provider failure or an unusable answer.
 */
export function aiHttpError(e: unknown): HttpError {
  if (!(e instanceof AiError)) return e instanceof HttpError ? e : new HttpError(500, 'Internal error')
  switch (e.kind) {
    case 'not_configured':
      return new HttpError(503, 'AI is not configured on this server')
    case 'rate_limited':
      return new HttpError(503, 'The AI provider is busy; try again shortly')
    case 'timeout':
      return new HttpError(504, 'The AI provider did not answer in time')
    case 'invalid_answer':
      return new HttpError(502, 'The AI provider gave an unusable answer')
    default:
      return new HttpError(502, 'The AI provider failed')
  }
}
