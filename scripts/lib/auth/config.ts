// Auth's settings, read from supabase/config.toml as the Supabase CLI reads them for its local
// GoTrue ([auth], [auth.email], [auth.rate_limit], [auth.hook.custom_access_token]); a key the
// file leaves out takes the CLI's default.
import { ROOT } from '../proc.ts'

type TomlValue = string | number | boolean | TomlValue[]
export type Toml = Record<string, Record<string, TomlValue>>

/** The small part of TOML config.toml uses: [tables], key = string | number | boolean | [array]. */
export function parseToml(text: string): Toml {
  const out: Toml = { '': {} }
  let table = ''
  for (const raw of text.split('\n')) {
    const line = raw.replace(/^\s+/, '')
    if (!line || line.startsWith('#')) continue
    const header = line.match(/^\[([^\]]+)\]/)
    if (header) {
      table = header[1].trim()
      out[table] ??= {}
      continue
    }
    const kv = line.match(/^([A-Za-z0-9_.-]+)\s*=\s*(.*)$/)
    if (kv) out[table][kv[1]] = parseValue(kv[2])
  }
  return out
}

function parseValue(s: string): TomlValue {
  s = s.trim()
  if (s.startsWith('"')) return JSON.parse(s.match(/^"(?:[^"\\]|\\.)*"/)![0])
  if (s.startsWith("'")) return s.slice(1, s.indexOf("'", 1))
  if (s.startsWith('[')) {
    const body = s.slice(1, s.lastIndexOf(']'))
    return [...body.matchAll(/"(?:[^"\\]|\\.)*"|'[^']*'|[^,\s]+/g)].map((m) => parseValue(m[0]))
  }
  const bare = s.replace(/\s+#.*$/, '')
  if (bare === 'true' || bare === 'false') return bare === 'true'
  const n = Number(bare.replace(/_/g, ''))
  return Number.isNaN(n) ? bare : n
}

/** "1s", "60s", "1m", "1h" (Go durations as config.toml writes them) in seconds. */
export function durationSeconds(v: TomlValue | undefined, fallback: number): number {
  if (typeof v === 'number') return v
  if (typeof v !== 'string') return fallback
  let total = 0
  for (const m of v.matchAll(/(\d+(?:\.\d+)?)(h|m|s|ms)/g)) {
    total += Number(m[1]) * ({ h: 3600, m: 60, s: 1, ms: 0.001 } as Record<string, number>)[m[2]]
  }
  return total || fallback
}

export interface AuthConfig {
  siteUrl: string
  additionalRedirectUrls: string[]
  jwtExpiry: number
  enableSignup: boolean
  enableAnonymousSignIns: boolean
  refreshTokenRotation: boolean
  refreshTokenReuseInterval: number
  minimumPasswordLength: number
  email: {
    enableSignup: boolean
    enableConfirmations: boolean
    doubleConfirmChanges: boolean
    maxFrequency: number // seconds between two e-mails of one kind to one user
    otpLength: number
    otpExpiry: number // seconds
  }
  rateLimit: {
    emailSent: number // per hour, the whole project
    signInSignUps: number // per 5 minutes per IP
    tokenRefresh: number // per 5 minutes per IP
    tokenVerifications: number // per 5 minutes per IP
    anonymousUsers: number // per hour per IP
  }
  customAccessTokenHook: string | null // "public.custom_access_token_hook"
}

const bool = (v: TomlValue | undefined, d: boolean) => (typeof v === 'boolean' ? v : d)
const num = (v: TomlValue | undefined, d: number) => (typeof v === 'number' ? v : d)
const str = (v: TomlValue | undefined, d: string) => (typeof v === 'string' ? v : d)

export function authConfigFrom(toml: Toml): AuthConfig {
  const auth = toml['auth'] ?? {}
  const email = toml['auth.email'] ?? {}
  const rate = toml['auth.rate_limit'] ?? {}
  const hook = toml['auth.hook.custom_access_token'] ?? {}
  const hookUri = str(hook.uri, '')
  const hookFn = hookUri.match(/^pg-functions:\/\/[^/]+\/([^/]+)\/([^/]+)$/)
  return {
    siteUrl: str(auth.site_url, 'http://127.0.0.1:3000'),
    additionalRedirectUrls: Array.isArray(auth.additional_redirect_urls)
      ? auth.additional_redirect_urls.map(String)
      : [],
    jwtExpiry: num(auth.jwt_expiry, 3600),
    enableSignup: bool(auth.enable_signup, true),
    enableAnonymousSignIns: bool(auth.enable_anonymous_sign_ins, false),
    refreshTokenRotation: bool(auth.enable_refresh_token_rotation, true),
    refreshTokenReuseInterval: num(auth.refresh_token_reuse_interval, 10),
    minimumPasswordLength: num(auth.minimum_password_length, 6),
    email: {
      enableSignup: bool(email.enable_signup, true),
      enableConfirmations: bool(email.enable_confirmations, false),
      doubleConfirmChanges: bool(email.double_confirm_changes, true),
      maxFrequency: durationSeconds(email.max_frequency, 1),
      otpLength: num(email.otp_length, 6),
      otpExpiry: num(email.otp_expiry, 3600),
    },
    rateLimit: {
      emailSent: num(rate.email_sent, 2),
      signInSignUps: num(rate.sign_in_sign_ups, 30),
      tokenRefresh: num(rate.token_refresh, 150),
      tokenVerifications: num(rate.token_verifications, 30),
      anonymousUsers: num(rate.anonymous_users, 30),
    },
    customAccessTokenHook: bool(hook.enabled, false) && hookFn ? `${hookFn[1]}.${hookFn[2]}` : null,
  }
}

/**
 * config.toml, then GoTrue's own environment variables where set (the Supabase CLI turns
 * config.toml into them; the test stack sets them to try anonymous sign-ins and to let Auth
 * redirect to the client tests' page).
 */
export async function loadAuthConfig(file = `${ROOT}/supabase/config.toml`): Promise<AuthConfig> {
  const config = authConfigFrom(parseToml(await Deno.readTextFile(file)))
  const anonymous = Deno.env.get('GOTRUE_EXTERNAL_ANONYMOUS_USERS_ENABLED')
  if (anonymous !== undefined) config.enableAnonymousSignIns = anonymous === 'true'
  // GoTrue's list of allowed redirects (the CLI writes additional_redirect_urls into it, comma
  // separated): set, it replaces config.toml's.
  const allowList = Deno.env.get('GOTRUE_URI_ALLOW_LIST')
  if (allowList !== undefined) config.additionalRedirectUrls = allowList.split(',').map((u) => u.trim()).filter(Boolean)
  return config
}
