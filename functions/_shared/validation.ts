// Request validation with zod 4: every failure is a 400 whose message names the field.
// Messages come from one error map (below), so schemas say only what is allowed:
// `z.string().trim().min(1).max(200)` answers "title: must not be empty" by itself.
import { z } from '@hono/zod-openapi'
import { badRequest } from './errors.ts'

const article = (word: string) => (/^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`)
const unit = (
  origin: string,
) => (origin === 'string' ? ' characters' : origin === 'array' || origin === 'set' ? ' items' : '')

/** The message of one issue, without its field (describeIssue adds the path). */
function issueMessage(iss: z.core.$ZodRawIssue): string | undefined {
  switch (iss.code) {
    case 'invalid_type':
      if (iss.input === undefined) return 'is required'
      return `must be ${article(iss.expected === 'int' ? 'integer' : String(iss.expected))}`
    case 'too_small':
      if (iss.origin === 'string' && Number(iss.minimum) === 1) return 'must not be empty'
      return `must be at least ${iss.minimum}${unit(iss.origin)}`
    case 'too_big':
      return `must be at most ${iss.maximum}${unit(iss.origin)}`
    case 'invalid_value':
      return `must be one of ${iss.values.map(String).join(', ')}`
    case 'invalid_format':
      if (iss.format === 'uuid' || iss.format === 'guid') return 'must be a UUID'
      if (iss.format === 'url') return 'must be a URL'
      if (iss.format === 'email') return 'must be an e-mail address'
      if (iss.format === 'datetime') return 'must be an ISO 8601 date-time'
      if (iss.format === 'date') return 'must be a date (YYYY-MM-DD)'
      if (iss.format === 'ipv4' || iss.format === 'ipv6') return 'must be an IP address'
      return `must be ${article(String(iss.format))}`
    case 'not_multiple_of':
      return `must be a multiple of ${iss.divisor}`
    case 'unrecognized_keys':
      return 'not an accepted field'
    case 'invalid_union':
      return 'does not match any accepted form'
    default:
      return undefined
  }
}
z.config({ customError: issueMessage })

/** "field: message" for the first issue (the field is the issue's dotted path). */
export function describeZodError(error: z.ZodError): string {
  const issue = error.issues[0]
  const field = issue.path.map(String).join('.')
  if (issue.code === 'unrecognized_keys') {
    return `${issue.keys.map((k) => (field ? `${field}.${k}` : k)).join(', ')}: not an accepted field`
  }
  return field ? `${field}: ${issue.message}` : issue.message
}

export function parseWith<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const result = schema.safeParse(value)
  if (!result.success) throw badRequest(describeZodError(result.error))
  return result.data
}

// zod 4's z.uuid() insists on RFC 9562 versions; ids made by hand (seeds, fixed system users)
// are any 8-4-4-4-12 hex string, as Postgres' uuid type accepts.
export const uuid = () => z.guid()

/** The optional id a client chooses for what it creates, so repeating the create is safe
 *  (create_once.ts; docs/journal.md "Retrying a create"). */
export const clientChosenId = () =>
  uuid().optional().openapi({
    description: 'Optional id chosen by the client (a UUID). Repeating the create with the same id and content ' +
      'answers 200 with what the first attempt made; the id with other content, or one in use elsewhere: 409 id_conflict.',
  })

/** A calendar date YYYY-MM-DD between years 1 and 9999 (what Postgres' date accepts and JS agrees on). */
export const isoDate = () =>
  z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date (YYYY-MM-DD)')
    .refine((d) => {
      const t = new Date(`${d}T00:00:00Z`)
      return !isNaN(t.getTime()) && t.toISOString().startsWith(d) && Number(d.slice(0, 4)) >= 1
    }, 'is not a calendar date')

/** A path parameter object of UUIDs: idParams('id', 'userId'). */
export function idParams<K extends string>(...names: K[]) {
  return z.object(
    Object.fromEntries(names.map((n) => [n, uuid().openapi({ param: { name: n, in: 'path' } })])) as {
      [P in K]: ReturnType<typeof uuid>
    },
  )
}

// ---- Strings Postgres cannot store, and structures too deep to store: refused before any
// schema runs, naming the field (a NUL byte, a lone UTF-16 surrogate, nesting beyond MAX_DEPTH).

export const MAX_DEPTH = 32

/** The first problem in a parsed JSON value, as "path: message", or null. */
export function unstorableValue(value: unknown, path: string[] = []): string | null {
  const at = (msg: string) => (path.length ? `${path.join('.')}: ${msg}` : `body: ${msg}`)
  if (path.length > MAX_DEPTH) return at(`nested more than ${MAX_DEPTH} levels deep`)
  if (typeof value === 'string') return stringProblem(value, at)
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unstorableValue(value[i], [...path, String(i)])
      if (found) return found
    }
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const keyProblem = stringProblem(k, at)
      if (keyProblem) return keyProblem
      const found = unstorableValue(v, [...path, k])
      if (found) return found
    }
  }
  return null
}

function stringProblem(s: string, at: (msg: string) => string): string | null {
  if (s.includes('\u0000')) return at('must not contain NUL characters')
  if (!s.isWellFormed()) return at('must be valid Unicode (a lone surrogate was sent)')
  return null
}

/** What every pg_cron request carries (private.schedule_edge_function_job's body): a scheduled
 *  endpoint's body accepts these beside its own fields. */
export const scheduledRunFields = {
  scheduled_at: z.string().max(100).optional().describe("pg_cron's now() when the run was queued"),
  invocation: z.number().int().min(1).max(20).optional().describe('Which of the requests queued side by side this is'),
}
