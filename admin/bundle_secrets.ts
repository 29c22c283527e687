// What in the console's build would hand a browser a server-side secret. Pure (no Node or Deno
// API), so the Vite build (vite.config.mts: it fails the build) and the local stack
// (scripts/lib/admin_console.ts) run the same check.

/** Server-side secrets by variable name: none may reach a browser (the anon or publishable key
 *  and the VAPID public key are public by design). */
export const SECRET_VARIABLES = [
  'SUPABASE_SERVICE_ROLE_KEY', 'SUPABASE_SECRET_KEY', 'JWT_SECRET', 'SUPABASE_JWT_SECRET', 'SUPABASE_DB_URL',
  'AI_API_KEY', 'STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET', 'RESEND_API_KEY', 'RESEND_WEBHOOK_SECRET',
  'EXPO_ACCESS_TOKEN', 'WEB_PUSH_VAPID_PRIVATE_KEY', 'MUSIC_CLIENT_SECRET', 'CRON_SECRET', 'DROPS_CRON_SECRET',
  'WORKOUT_WINDOW_CRON_SECRET', 'CHAT_CRON_SECRET', 'ENCOURAGEMENT_DROPS_CRON_SECRET', 'MUSIC_SYNC_CRON_SECRET',
  'LABS_CRON_SECRET', 'NOTIFICATIONS_CRON_SECRET',
]

/** Shapes of secrets, whatever their value. */
const SECRET_SHAPES: [string, RegExp][] = [
  ['a Supabase secret key', /\bsb_secret_[A-Za-z0-9_-]{10,}/],
  ['a Stripe secret or restricted key', /\b[sr]k_(live|test)_[A-Za-z0-9]{10,}/],
  ['a Stripe webhook secret', /\bwhsec_[A-Za-z0-9+/=]{10,}/],
  ['an OpenAI-style API key', /\bsk-(proj-)?[A-Za-z0-9_-]{20,}/],
  ['a Resend API key', /\bre_[A-Za-z0-9]{8,}_[A-Za-z0-9]{16,}/],
  ['a database URL with a password', /\bpostgres(ql)?:\/\/[^\s:@/'"`]+:[^\s@/'"`]+@/],
  ['a private key', /-----BEGIN [A-Z ]*PRIVATE KEY-----/],
]

const jwtRole = (jwt: string): string => {
  try {
    return JSON.parse(atob(jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))).role ?? 'none'
  } catch {
    return 'unreadable'
  }
}

/** Refuses a key that is not public: an anon JWT or a publishable key. */
export function publicKeyProblem(key: string | undefined): string | null {
  if (!key) return 'VITE_SUPABASE_ANON_KEY is not set'
  if (key.startsWith('sb_publishable_')) return null
  if (/^eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+$/.test(key) && jwtRole(key) === 'anon') return null
  return "VITE_SUPABASE_ANON_KEY is not the project's anon or publishable key (a service-role or secret key must never reach a browser)"
}

/**
 * One line per finding in `files`: the value of any SECRET_VARIABLES set in `env` (and the
 * `known` secrets), a secret's shape, or a JWT whose role is not anon. Empty: clean.
 */
export function secretFindings(
  files: { name: string; text: string }[],
  env: (name: string) => string | undefined,
  known: Record<string, string> = {},
): string[] {
  const values = new Map<string, string>(Object.entries(known))
  for (const name of SECRET_VARIABLES) {
    const v = env(name)
    if (v && v.length >= 8) values.set(name, v)
  }
  const findings: string[] = []
  for (const { name, text } of files) {
    for (const [what, value] of values) if (text.includes(value)) findings.push(`${name}: ${what}`)
    for (const [what, shape] of SECRET_SHAPES) if (shape.test(text)) findings.push(`${name}: ${what}`)
    for (const jwt of text.match(/eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g) ?? []) {
      const role = jwtRole(jwt)
      if (role !== 'anon') findings.push(`${name}: a JWT with role ${role}`)
    }
  }
  return findings
}
