// The e-mails Auth sends (confirmation, magic link, recovery, e-mail change, invite), with
// Supabase's default templates, delivered to the local inbox (local_auth.inbox; served by
// inbox.ts). Links point at this stack's /auth/v1/verify, as GoTrue's {{ .ConfirmationURL }}.
import { tooMany } from './errors.ts'
import { ONE_HOUR, takeToken } from './ratelimit.ts'
import type { AuthContext } from './sessions.ts'
import type { Sql } from './users.ts'

export type MailKind = 'signup' | 'magiclink' | 'recovery' | 'email_change' | 'invite'

const TEMPLATES: Record<
  MailKind,
  { subject: string; body: (url: string, code: string, o: MailVars) => string }
> = {
  signup: {
    subject: 'Confirm Your Signup',
    body: (url, code) =>
      `<h2>Confirm your signup</h2>\n\n<p>Follow this link to confirm your user:</p>\n<p><a href="${url}">Confirm your mail</a></p>\n<p>Alternatively, enter the code: ${code}</p>`,
  },
  invite: {
    subject: 'You have been invited',
    body: (url, code, o) =>
      `<h2>You have been invited</h2>\n\n<p>You have been invited to create a user on ${o.siteUrl}. Follow this link to accept the invite:</p>\n<p><a href="${url}">Accept the invite</a></p>\n<p>Alternatively, enter the code: ${code}</p>`,
  },
  magiclink: {
    subject: 'Your Magic Link',
    body: (url, code) =>
      `<h2>Magic Link</h2>\n\n<p>Follow this link to login:</p>\n<p><a href="${url}">Log In</a></p>\n<p>Alternatively, enter the code: ${code}</p>`,
  },
  recovery: {
    subject: 'Reset Your Password',
    body: (url, code) =>
      `<h2>Reset Password</h2>\n\n<p>Follow this link to reset the password for your user:</p>\n<p><a href="${url}">Reset Password</a></p>\n<p>Alternatively, enter the code: ${code}</p>`,
  },
  email_change: {
    subject: 'Confirm Email Change',
    body: (url, code, o) =>
      `<h2>Confirm Change of Email</h2>\n\n<p>Follow this link to confirm the update of your email from ${o.email} to ${o.newEmail}:</p>\n<p><a href="${url}">Change Email</a></p>\n<p>Alternatively, enter the code: ${code}</p>`,
  },
}

interface MailVars {
  siteUrl: string
  email: string
  newEmail: string
}

const escapeHtml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** GoTrue's {{ .ConfirmationURL }}: /verify with the token hash, the type and where to go after. */
export function verifyUrl(ctx: AuthContext, tokenHash: string, type: MailKind, redirectTo: string) {
  const q = new URLSearchParams({ token: tokenHash, type, redirect_to: redirectTo })
  return `${ctx.apiUrl}/auth/v1/verify?${q}`
}

/** Counts the e-mail against [auth.rate_limit] email_sent (per hour, the whole project). */
export function countEmailSent(ctx: AuthContext, sql: Sql) {
  return takeToken(
    sql,
    'email_sent',
    'project',
    ctx.config.rateLimit.emailSent,
    ONE_HOUR,
    tooMany('over_email_send_rate_limit', 'Email rate limit exceeded'),
  )
}

/** Refuses a second e-mail of a kind to a user within [auth.email] max_frequency. */
export function checkMaxFrequency(ctx: AuthContext, sentAt: Date | null) {
  if (!sentAt) return
  const wait = Math.ceil((sentAt.getTime() + ctx.config.email.maxFrequency * 1000 - Date.now()) / 1000)
  if (wait > 0) {
    throw tooMany(
      'over_email_send_rate_limit',
      `For security purposes, you can only request this after ${wait} seconds.`,
    )
  }
}

export async function sendAuthMail(ctx: AuthContext, sql: Sql, o: {
  kind: MailKind
  to: string
  tokenHash: string
  otp: string
  redirectTo: string
  email?: string
  newEmail?: string
}) {
  await countEmailSent(ctx, sql)
  const t = TEMPLATES[o.kind]
  const url = verifyUrl(ctx, o.tokenHash, o.kind, o.redirectTo)
  const html = t.body(escapeHtml(url), o.otp, {
    siteUrl: escapeHtml(ctx.config.siteUrl),
    email: escapeHtml(o.email ?? o.to),
    newEmail: escapeHtml(o.newEmail ?? o.to),
  })
  const text = html.replace(
    /<a href="([^"]*)">([^<]*)<\/a>/g,
    (_m, href, label) => `${label} ( ${href.replace(/&amp;/g, '&')} )`,
  )
    .replace(/<[^>]+>/g, '').replace(/\n{3,}/g, '\n\n').trim()
  await sql`insert into local_auth.inbox (sender, recipient, subject, html, text)
            values (${ctx.inboxSender}, ${o.to}, ${t.subject}, ${html}, ${text})`
}
