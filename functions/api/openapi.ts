// Declaring a route once: endpoint({...}) takes the zod schemas that validate the request and
// turns them, with the route's credential and reply shapes, into both the Hono route and its
// entry in GET /api/openapi.json. Every route module is a routeModule(), so every one shares
// the validation hook that answers SPEC's 400 {error} naming the field.
//
//   export const goalRoutes = routeModule()
//     .openapi(endpoint({
//       method: 'get', path: '/goals/{id}', summary: 'A goal with its check-ins', tag: 'Goals',
//       auth: 'bearer', params: idParams('id'), response: Goal,
//     }), async (c) => { const { id } = c.req.valid('param'); ... })
import {
  createRoute,
  OpenAPIHono,
  type OpenAPIHono as OpenAPIHonoType,
  type RouteConfig,
  z,
} from '@hono/zod-openapi'
import type { MiddlewareHandler } from 'hono'
import type { CronGroup } from '../_shared/cron.ts'
import {
  badRequest,
  codeFor,
  FIELD_CODE_PATTERN,
  GENERIC_CODES,
  NAMED_CODES,
  type NamedCode,
} from '../_shared/errors.ts'
import { IF_MATCH_DESCRIPTION, staleMessage } from '../_shared/etag.ts'
import { describeZodError } from '../_shared/validation.ts'
import {
  adminOrCron,
  type ApiEnv,
  bearer,
  cronBearer,
  cronSecret,
  notCounted,
  publicRoute,
  superAdmin,
} from './credentials.ts'

/** Who may call a route, and how they prove it. */
export type Credential =
  | 'bearer' // a signed-in user's access token
  | 'superAdmin' // the same, and profiles.role = super_admin (checked in the database)
  | 'none' // public on purpose
  | { cron: CronGroup } // x-cron-secret (SPEC Authentication 5)
  | { cronBearer: CronGroup } // Authorization: Bearer <cron secret> (frontend-hosted jobs)
  | { adminOrCron: CronGroup } // a super admin's bearer token, or x-cron-secret
  | { signature: 'stripe' | 'svix' } // a provider-signed webhook; the handler verifies it

/** Every code an {error} may carry: the generic and named ones, or a field's. */
export const DOCUMENTED_CODES = [...new Set(Object.values(GENERIC_CODES)), ...Object.keys(NAMED_CODES)]

const codeList = (codes: Record<string, string>) =>
  Object.entries(codes).map(([code, means]) => `- \`${code}\`: ${means}`).join('\n')

export const ErrorCode = z.union([
  z.enum(DOCUMENTED_CODES as [string, ...string[]]),
  z.string().regex(new RegExp(FIELD_CODE_PATTERN)),
]).openapi('ErrorCode', {
  description: 'A stable machine-readable code: branch and localize on it (the message may change). ' +
    'A 400 naming a field is `<field>_required` (missing or empty) or `<field>_invalid` (anything else), ' +
    'the field\'s path in snake case (`preferences.theme` → `preferences_theme_invalid`, list indexes ' +
    'left out). Named codes (their usual status):\n' +
    codeList(Object.fromEntries(Object.entries(NAMED_CODES).map(([k, v]) => [k, `${v.status}: ${v.means}`]))) +
    '\n\nOtherwise, by status:\n' +
    codeList(Object.fromEntries(Object.entries(GENERIC_CODES).map(([status, code]) => [code, status]))),
})

export const ErrorBody = z.object({ error: z.string(), code: ErrorCode }).openapi('Error', {
  description: 'Every error body (SPEC Errors 1): a message for people, naming the field when the input ' +
    'was wrong, and its `code` for programs (see ErrorCode).',
})
export const Message = z.object({ message: z.string() }).openapi('Message')
/**
 * `schema | null` for a reply field. zod-to-openapi renders `.nullable()` of a schema registered
 * as a component wrongly (the component itself turns nullable, or null is refused where it is
 * used); a union with null renders as `anyOf: [$ref, {type: null}]`.
 */
export const orNull = <T extends z.ZodType>(schema: T) => z.union([schema, z.null()])

/** The cursor of the next page of a newest-first list, or null at the end. */
export const NextCursor = z.string().nullable().openapi({
  description: 'Pass as `before` for the next page; null at the end.',
})

const ERROR_TEXT: Record<number, string> = {
  400: 'Bad input: the message names the field; nothing was written',
  401: 'Missing, invalid or expired credential',
  402: 'Not enough drops',
  403: 'Not allowed for this caller',
  404: 'Not found (or not visible to the caller)',
  409: 'Conflict with the current state',
  413: 'Body too large',
  422: 'Well-formed but refused (the message says why)',
  429: 'A limit was reached; try again later',
  500: 'Internal error',
  501: 'Not available in this deployment',
  502: 'The upstream provider failed',
  503: 'The database or a provider is unavailable (or not configured)',
  504: 'The upstream provider did not answer in time',
}

/** A typical {error} of each status, shown as that reply's example. */
const ERROR_EXAMPLE: Record<number, string> = {
  400: 'title: must not be empty',
  401: 'Missing bearer token',
  402: 'insufficient drops: balance 40, price 100',
  403: 'Insufficient permissions',
  404: 'Not found',
  409: 'A sync of this account is already running',
  413: 'The body is larger than 1 MB',
  422: 'Idempotency-Key: already used for another purchase',
  429: 'Daily limit for tone pack images reached; try again tomorrow (UTC)',
  500: 'Internal error',
  501: 'Not available in this deployment',
  502: 'The AI provider failed',
  503: 'The database is unavailable; try again shortly',
  504: 'The AI provider did not answer in time',
}

/**
 * The named codes a route may answer beyond those its credential and request imply, by
 * "METHOD /path" (one table, so the routes stay as they are; a test checks each is a route).
 */
export const ROUTE_CODES: Record<string, NamedCode[]> = {
  'POST /encouragement-drops/send': ['daily_allowance_exhausted', 'custom_drop_limit_reached'],
  'POST /workout-window/checkin': ['already_checked_in'],
  'DELETE /user/account': ['reauthentication_needed', 'ownership_transfer_needed'],
  'DELETE /admin/users/{id}': ['ownership_transfer_needed'],
  'POST /journal': ['team_id_required', 'org_id_required'],
  'PUT /journal/{id}': ['team_id_required', 'org_id_required'],
  'POST /notebooks': ['team_id_required', 'org_id_required'],
  'PUT /notebooks/{id}': ['team_id_required', 'org_id_required'],
  'POST /tone-packs/{id}/purchase': ['insufficient_drops'],
}

/** The codes one error status of a route may carry, for that reply's description. */
function codesOf(status: number, d: EndpointDef<Method, string, any, any, any>): string[] {
  const named = (ROUTE_CODES[`${d.method.toUpperCase()} ${d.path}`] ?? [])
    .filter((code) => NAMED_CODES[code].status === status)
  const implied: string[] = []
  if (status === 401 && (d.auth === 'bearer' || d.auth === 'superAdmin')) {
    implied.push('impersonation_session_ended', 'account_deleted')
  }
  if (status === 503) implied.push('concurrent_change')
  if (status === 409 && d.replayable) implied.push('id_conflict')
  const fields = status === 400 ? ['<field>_required', '<field>_invalid'] : []
  return [...fields, ...named, ...implied, GENERIC_CODES[status] ?? 'internal_error']
}

/** Reply headers documented on a status, every route alike. */
const RETRY_AFTER = {
  'Retry-After': {
    description:
      'Seconds to wait before repeating the request (a 429 of the write rate limit sends it; a 503 when a concurrent change got in the way).',
    schema: { type: 'integer' as const, minimum: 0 },
    required: false,
  },
}
const ERROR_HEADERS: Record<number, typeof RETRY_AFTER> = { 429: RETRY_AFTER, 503: RETRY_AFTER }
const ETAG = {
  ETag: {
    description: 'The version of the row, `"<row_version>"`: send it back as If-Match to write only over it.',
    schema: { type: 'string' as const, example: '"1277"' },
    required: true,
  },
}

/** The body of a 412, one component per versioned resource: {error, code} and the row as it is now. */
const staleBodies = new Map<string, z.ZodType>()
function staleBody(field: string, row: z.ZodType): z.ZodType {
  let body = staleBodies.get(field)
  if (!body) {
    const name = `${field[0].toUpperCase()}${field.slice(1)}PreconditionFailed`
    body = z.object({ error: z.string(), code: ErrorCode, [field]: row }).openapi(name)
    staleBodies.set(field, body)
  }
  return body
}

type Method = 'get' | 'post' | 'put' | 'delete' | 'patch'
type AnyObject = z.ZodType<Record<string, unknown>>

export interface EndpointDef<
  M extends Method,
  P extends string,
  Params extends AnyObject | undefined,
  Query extends AnyObject | undefined,
  Body extends z.ZodType | undefined,
> {
  method: M
  /** OpenAPI style: /journal/{id} */
  path: P
  summary: string
  description?: string
  tag: string
  auth: Credential
  params?: Params
  query?: Query
  /** A JSON body, validated before the handler runs. */
  body?: Body
  /** Set false when the body may be left out entirely (then the handler sees {}). */
  bodyRequired?: boolean
  /** A multipart body, documented here and parsed by the handler (file uploads). */
  multipart?: z.ZodType
  /** The success reply's shape; `status` defaults to 200. */
  response?: z.ZodType
  status?: 200 | 201 | 202 | 204 | 302
  responseDescription?: string
  /** Error statuses beyond those the credential and request imply. */
  errors?: readonly number[]
  /** A public POST that writes nothing a person could flood (a check, a link's one action): why
   *  it is not counted against the write rate limit. */
  notAWrite?: string
  /** An error status whose body is {error} and more (a readiness check's 503 keeps its report). */
  otherReplies?: Record<number, { description: string; schema: z.ZodType; example: { error: string; code: string } }>
  /** A create whose body may carry a client-chosen `id`: a retry with the same id and content
   *  answers 200 with the row already made, a reused id 409 id_conflict (create_once.ts). */
  replayable?: boolean
  /** The route honours an Idempotency-Key header (its rules, for the parameter's description). */
  idempotencyKey?: string
  /** The route's row has a version (row_version, supabase/schemas/sync.sql): a success reply
   *  with the row sends it as ETag; a PUT or DELETE honours If-Match, a stale one answered 412
   *  with the row as it is now under `field` (functions/_shared/etag.ts). */
  versioned?: { field: string; schema: z.ZodType }
}

type RequestOf<Params, Query, Body> =
  & (Params extends z.ZodType ? { params: Params } : {})
  & (Query extends z.ZodType ? { query: Query } : {})
  & (Body extends z.ZodType
    ? { body: { content: { 'application/json': { schema: Body } }; required: boolean } }
    : {})

export type Endpoint<M extends Method, P extends string, Params, Query, Body> =
  & Omit<RouteConfig, 'method' | 'path' | 'request'>
  & { method: M; path: P; request: RequestOf<Params, Query, Body>; getRoutingPath(): string }

function middlewareFor({ auth, notAWrite }: { auth: Credential; notAWrite?: string }): MiddlewareHandler<ApiEnv> {
  if (auth === 'bearer') return bearer
  if (auth === 'superAdmin') return superAdmin
  if (auth === 'none') return notAWrite ? notCounted : publicRoute
  if ('cron' in auth) return cronSecret(auth.cron)
  if ('cronBearer' in auth) return cronBearer(auth.cronBearer)
  if ('adminOrCron' in auth) return adminOrCron(auth.adminOrCron)
  return notCounted // signatures are verified by the handler, on the raw body
}

/** Mutating requests of users and anonymous callers count against the write rate limit;
 *  scheduled jobs and provider webhooks do not. */
function writeLimited(d: { method: Method; auth: Credential; notAWrite?: string }): boolean {
  if (d.method === 'get' || d.notAWrite) return false
  return typeof d.auth === 'string' || 'adminOrCron' in d.auth
}

function securityFor(auth: Credential): Record<string, string[]>[] {
  if (auth === 'bearer' || auth === 'superAdmin') return [{ bearerAuth: [] }]
  if (auth === 'none') return []
  if ('cron' in auth) return [{ cronSecret: [] }]
  if ('cronBearer' in auth) return [{ cronBearer: [] }]
  if ('adminOrCron' in auth) return [{ bearerAuth: [] }, { cronSecret: [] }]
  return [{ [auth.signature === 'stripe' ? 'stripeSignature' : 'svixSignature']: [] }]
}

function credentialNote(auth: Credential): string {
  if (auth === 'bearer') return "Credential: a signed-in user's bearer token."
  if (auth === 'superAdmin') return "Credential: a super admin's bearer token."
  if (auth === 'none') return 'Credential: none.'
  if ('cron' in auth) return `Credential: x-cron-secret (${auth.cron} group).`
  if ('cronBearer' in auth) {
    return `Credential: Authorization: Bearer <cron secret> (${auth.cronBearer} group).`
  }
  if ('adminOrCron' in auth) {
    return `Credential: a super admin's bearer token, or x-cron-secret (${auth.adminOrCron} group).`
  }
  return `Credential: the ${auth.signature === 'stripe' ? 'Stripe-Signature' : 'svix-*'} headers; no bearer.`
}

function errorStatuses(d: EndpointDef<Method, string, any, any, any>): number[] {
  const s = new Set<number>(d.errors ?? [])
  if (d.params || d.query || d.body || d.multipart) s.add(400)
  if (d.auth !== 'none') s.add(401)
  if (d.auth === 'superAdmin' || (typeof d.auth === 'object' && 'adminOrCron' in d.auth)) s.add(403)
  if (d.params) s.add(404)
  if (d.replayable) s.add(409)
  if (d.body || d.multipart) s.add(413)
  if (writeLimited(d)) s.add(429)
  s.add(500)
  s.add(503)
  return [...s].sort()
}

/** The route for app.openapi(): validation, credential middleware and documentation in one. */
export function endpoint<
  M extends Method,
  P extends string,
  Params extends AnyObject | undefined = undefined,
  Query extends AnyObject | undefined = undefined,
  Body extends z.ZodType | undefined = undefined,
>(d: EndpointDef<M, P, Params, Query, Body>): Endpoint<M, P, Params, Query, Body> {
  const request: Record<string, unknown> = {}
  if (d.params) request.params = d.params
  if (d.query) request.query = d.query
  if (d.body) {
    request.body = { content: { 'application/json': { schema: d.body } }, required: d.bodyRequired ?? true }
  }
  if (d.multipart) {
    request.body = { content: { 'multipart/form-data': { schema: d.multipart } }, required: true }
  }
  // Documented only: the handler checks the headers and names them in its own messages.
  const conditional = d.versioned && (d.method === 'put' || d.method === 'delete')
  const headers = {
    ...(d.idempotencyKey
      ? {
        'idempotency-key': z.string().optional().openapi({
          description: d.idempotencyKey,
          example: '5f1d2c3a-8e4b-4c7d-9a10-2b3c4d5e6f70',
        }),
      }
      : {}),
    ...(conditional
      ? { 'if-match': z.string().optional().openapi({ description: IF_MATCH_DESCRIPTION, example: '"1277"' }) }
      : {}),
  }
  if (Object.keys(headers).length) request.headers = z.object(headers)
  const status = d.status ?? 200
  const responses: RouteConfig['responses'] = {
    [status]: {
      description: d.responseDescription ?? (status === 302 ? 'Redirect' : 'Success'),
      ...(d.versioned && d.method !== 'delete' ? { headers: ETAG } : {}),
      ...(d.response ? { content: { 'application/json': { schema: d.response } } } : {}),
    },
  }
  if (d.replayable) {
    responses[200] = {
      description: 'A retry: a create with this id and the same content was made already; that row, unchanged',
      ...(d.response ? { content: { 'application/json': { schema: d.response } } } : {}),
    }
  }
  for (const code of errorStatuses(d)) {
    const example = ERROR_EXAMPLE[code] ?? ERROR_TEXT[code] ?? 'Error'
    responses[code] = {
      description: `${ERROR_TEXT[code] ?? 'Error'}. Codes: ${codesOf(code, d).map((c) => `\`${c}\``).join(', ')}`,
      ...(ERROR_HEADERS[code] ? { headers: ERROR_HEADERS[code] } : {}),
      content: {
        'application/json': {
          schema: ErrorBody,
          example: { error: example, code: code === 402 ? 'insufficient_drops' : codeFor(code, example) },
        },
      },
    }
  }
  if (conditional) {
    responses[412] = {
      description: `The row changed since it was read: If-Match does not name its current version; nothing was ` +
        `written. Code: \`precondition_failed\`; \`${d.versioned!.field}\` is the row as it is now (ETag: its version).`,
      headers: ETAG,
      content: {
        'application/json': {
          schema: staleBody(d.versioned!.field, d.versioned!.schema),
          example: { error: staleMessage(d.versioned!.field), code: 'precondition_failed' },
        },
      },
    }
  }
  for (const [code, reply] of Object.entries(d.otherReplies ?? {})) {
    responses[code] = {
      description: reply.description,
      ...(ERROR_HEADERS[Number(code)] ? { headers: ERROR_HEADERS[Number(code)] } : {}),
      content: { 'application/json': { schema: reply.schema, example: reply.example } },
    }
  }
  return createRoute({
    method: d.method,
    path: d.path,
    summary: d.summary,
    description: [d.description, credentialNote(d.auth)].filter(Boolean).join('\n\n'),
    tags: [d.tag],
    security: securityFor(d.auth),
    middleware: middlewareFor(d),
    request,
    responses,
  }) as unknown as Endpoint<M, P, Params, Query, Body>
}

/**
 * Turns a failed validation into SPEC's 400 {error} naming the field. A body that is not JSON
 * (or JSON sent under another Content-Type) never reads as {}: the route refuses it.
 */
export const validationHook = (result: { success: boolean; error?: unknown; target: string }) => {
  if (!result.success) throw badRequest(describeZodError(result.error as z.ZodError))
}

/** A route module: an OpenAPIHono sharing the validation hook. */
export function routeModule(): OpenAPIHonoType<ApiEnv> {
  return new OpenAPIHono<ApiEnv>({ defaultHook: validationHook })
}

/** Registers the credentials every route may name, for the OpenAPI document. */
export function registerSecuritySchemes(app: OpenAPIHonoType<ApiEnv>) {
  const r = app.openAPIRegistry
  r.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'A Supabase Auth access token (HS256 with the project secret, or ES256/RS256 from the JWKS).',
  })
  r.registerComponent('securitySchemes', 'cronSecret', {
    type: 'apiKey',
    in: 'header',
    name: 'x-cron-secret',
    description: "The cron secret of the endpoint's group (docs/scheduled_jobs.md: Cron secrets).",
  })
  r.registerComponent('securitySchemes', 'cronBearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'Frontend-hosted scheduled routes: the cron secret as a bearer token.',
  })
  r.registerComponent('securitySchemes', 'stripeSignature', {
    type: 'apiKey',
    in: 'header',
    name: 'Stripe-Signature',
    description: "Stripe's webhook signature over the raw body.",
  })
  r.registerComponent('securitySchemes', 'svixSignature', {
    type: 'apiKey',
    in: 'header',
    name: 'svix-signature',
    description: "Resend's webhook signature (Svix headers svix-id, svix-timestamp, svix-signature).",
  })
}
