// Impersonation (SPEC Authentication 7, admin route /auth/impersonate-callback): a super admin
// gets a short-lived access token for a user, carrying the impersonator in its `act` claim
// (RFC 8693). The database decides who may (never another super admin, never an inactive user,
// a reason always) and writes the audit row (migration *_labs.sql). Once the session is stopped
// or expired its token is refused on every path, reads included (401), and everything done in it
// is recorded with its impersonator: every row written, whoever writes it, and every mutating
// /api request (migration *_impersonation_everywhere.sql, functions/api/credentials.ts).
import { z } from '@hono/zod-openapi'
import { SignJWT } from 'jose'
import { optionalEnv } from '../../_shared/env.ts'
import { HttpError, unwrap } from '../../_shared/errors.ts'
import { decodeCursor, encodeCursor, newestFirstPage, pageQuery } from '../../_shared/pagination.ts'
import { uuid } from '../../_shared/validation.ts'
import { endpoint, NextCursor, routeModule } from '../openapi.ts'

/** How many rows of what its sessions did the audit page carries (the rest: the per-session list). */
const WRITES_ON_AUDIT_PAGE = 500 // under PostgREST's max_rows (1000), which would cut the one more row we ask for

/** At most 15 minutes (the bound). */
export const IMPERSONATION_TOKEN_SECONDS = 15 * 60

const tag = 'Admin'

/**
 * The project's HS256 secret, or a 501: a project that signs its tokens with an asymmetric key
 * only Supabase Auth holds (JWT signing keys, no legacy secret) cannot mint one here.
 */
export function signingSecret(env: (name: string) => string | undefined = optionalEnv): Uint8Array {
  const secret = env('JWT_SECRET') ?? env('SUPABASE_JWT_SECRET')
  if (!secret) {
    throw new HttpError(
      501,
      "Impersonation needs the project's HS256 JWT secret (JWT_SECRET); this project signs tokens " +
        'with an asymmetric key that only Supabase Auth holds, so the API cannot mint a token for another user',
    )
  }
  return new TextEncoder().encode(secret)
}

const AuditRow = z.object({
  id: z.number().int(),
  session_id: z.string(),
  event: z.enum(['start', 'stop']),
  admin_id: z.string(),
  target_id: z.string(),
  reason: z.string(),
  expires_at: z.string().nullable(),
  created_at: z.string(),
}).openapi('ImpersonationAudit')

export const impersonationRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/admin/impersonation',
      tag,
      auth: 'superAdmin',
      errors: [404, 409, 501],
      status: 201,
      body: z.object({ user_id: uuid(), reason: z.string().trim().min(1).max(1000) }).strict(),
      summary:
        'Start impersonating a user (super admin): audited, with a mandatory reason; returns a token of at most 15 minutes',
      description:
        'Never another super admin (403) or an inactive user (409). The token carries `act: {sub: <admin id>}`, ' +
        '`impersonation_session` and a `session_id` that is no Auth session, so Supabase Auth refuses it (403 ' +
        'session_not_found: no password, e-mail, factor or sign-out change); every row written in the session (by the token or by the api on its behalf) and every ' +
        'mutating /api request made with it are recorded in impersonation_writes. 501 where the project cannot mint tokens.',
      response: z.object({
        session_id: z.string(),
        access_token: z.string(),
        token_type: z.literal('bearer'),
        expires_at: z.string(),
        user: z.object({ id: z.string(), email: z.string().nullable() }),
      }),
    }),
    async (c) => {
      const body = c.req.valid('json')
      const secret = signingSecret() // before anything is written
      const session = unwrap(
        await c.var.db.rpc('start_impersonation', {
          target_user_id: body.user_id,
          reason: body.reason,
          lifetime_seconds: IMPERSONATION_TOKEN_SECONDS,
        }).single(),
      )
      const exp = Math.floor(new Date(session.expires_at).getTime() / 1000)
      const token = await new SignJWT({
        role: 'authenticated',
        aud: 'authenticated',
        email: session.target_email ?? undefined,
        act: { sub: c.var.caller.id },
        impersonation_session: session.session_id,
        // Supabase Auth (GoTrue) looks session_id up in auth.sessions on every route that takes
        // a user's token and answers 403 session_not_found when it is absent; a token without
        // one it would accept. This id is never a row there, so Auth refuses the token (no
        // password, e-mail, factor or sign-out change) while PostgREST, /api and Storage,
        // which do not look sessions up, take it until the impersonation session ends.
        session_id: session.session_id,
      })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(session.target_id)
        .setIssuedAt()
        .setExpirationTime(exp)
        .sign(secret)
      console.log(
        `impersonation started: admin ${c.var.caller.id} as ${session.target_id}, session ${session.session_id}`,
      )
      return c.json({
        session_id: session.session_id,
        access_token: token,
        token_type: 'bearer' as const,
        expires_at: session.expires_at,
        user: { id: session.target_id, email: session.target_email },
      }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/admin/impersonation/stop',
      tag,
      auth: 'bearer',
      errors: [403, 404],
      bodyRequired: false,
      body: z.object({ session_id: uuid().optional() }).strict(),
      summary:
        'End an impersonation session: with the impersonation token itself, or as a super admin naming session_id',
      description:
        'From the next request on, the session\'s token gets 401 {error: "The impersonation session has ended"} ' +
        'everywhere: /api, PostgREST (reads included) and storage.',
      response: z.object({ session_id: z.string().nullable(), stopped: z.boolean() }),
    }),
    async (c) => {
      const sessionId = c.req.valid('json')?.session_id ??
        (c.var.caller.claims.impersonation_session as string | undefined) ?? null
      const stopped = unwrap(await c.var.db.rpc('stop_impersonation', { session_id: sessionId }))
      return c.json({ session_id: sessionId, stopped })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/admin/impersonation/audit',
      tag,
      auth: 'superAdmin',
      query: z.object({
        ...pageQuery,
        target: uuid().optional().openapi({ description: "Only the sessions of this impersonated user (the user's admin page)" }),
      }).strict(),
      summary: 'The impersonation audit trail, newest first (super admin); rows never change',
      response: z.object({
        audit: z.array(AuditRow),
        writes: z.array(z.record(z.string(), z.unknown())).describe(
          'What the sessions on this page did, newest first: each row written (kind write: table_name, operation, row_id, ' +
            `actor_role) and each mutating /api request (kind request: operation = method, detail.path); at most ${WRITES_ON_AUDIT_PAGE}`,
        ),
        writes_truncated: z.boolean()
          .describe(
            'True when the sessions did more than `writes` holds: page through GET /admin/impersonation/sessions/{id}/writes',
          ),
        next_cursor: NextCursor,
      }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      const cursor = decodeCursor(q.before)
      let query = c.var.db.from('impersonation_audit').select('*')
      if (q.target) query = query.eq('target_id', q.target)
      if (cursor) {
        if (!/^\d+$/.test(cursor.id)) throw new HttpError(400, 'before: not a valid cursor')
        const t = JSON.stringify(cursor.createdAt)
        query = query.or(`created_at.lt.${t},and(created_at.eq.${t},id.lt.${cursor.id})`)
      }
      const rows = unwrap(
        await query.order('created_at', { ascending: false }).order('id', { ascending: false }).limit(
          q.limit + 1,
        ),
      ) as z.infer<typeof AuditRow>[]
      const audit = rows.slice(0, q.limit)
      const sessions = [...new Set(audit.map((r) => r.session_id))]
      const writes = sessions.length
        ? unwrap(
          await c.var.db.from('impersonation_writes').select('*').in('session_id', sessions)
            .order('created_at', { ascending: false }).order('id', { ascending: false }).limit(
              WRITES_ON_AUDIT_PAGE + 1,
            ),
        )
        : []
      return c.json({
        audit,
        writes: writes.slice(0, WRITES_ON_AUDIT_PAGE),
        writes_truncated: writes.length > WRITES_ON_AUDIT_PAGE,
        next_cursor: rows.length > q.limit ? encodeCursor(audit[audit.length - 1]) : null,
      })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/admin/impersonation/sessions/{id}/writes',
      tag,
      auth: 'superAdmin',
      params: z.object({ id: uuid() }),
      query: z.object(pageQuery).strict(),
      summary:
        'Everything one impersonation session did (each row written, each mutating request), newest first (super admin)',
      response: z.object({ writes: z.array(z.record(z.string(), z.unknown())), next_cursor: NextCursor }),
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const { items, next_cursor } = await newestFirstPage(
        c.var.db.from('impersonation_writes').select('*').eq('session_id', id),
        c.req.valid('query'),
      )
      return c.json({ writes: items, next_cursor })
    },
  )
