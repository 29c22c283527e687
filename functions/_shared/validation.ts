// Request validation with zod: every failure is a 400 naming the field.
import type { Context } from 'hono'
import { z, type ZodError, type ZodTypeAny } from 'zod'
import { badRequest } from './errors.ts'

export function describeZodError(error: ZodError): string {
  const issue = error.issues[0]
  const field = issue.path.join('.')
  if (issue.code === 'unrecognized_keys') {
    return `${issue.keys.map((k) => (field ? `${field}.${k}` : k)).join(', ')}: not an accepted field`
  }
  return field ? `${field}: ${issue.message}` : issue.message
}

export function parseWith<S extends ZodTypeAny>(schema: S, value: unknown): z.infer<S> {
  const result = schema.safeParse(value)
  if (!result.success) throw badRequest(describeZodError(result.error))
  return result.data
}

/** The JSON body, validated. Malformed JSON or a non-JSON body is a 400. */
export async function readJson<S extends ZodTypeAny>(c: Context, schema: S): Promise<z.infer<S>> {
  const text = await c.req.text()
  let value: unknown
  try {
    value = text.trim() === '' ? undefined : JSON.parse(text)
  } catch {
    throw badRequest('Malformed JSON body')
  }
  if (value === undefined) throw badRequest('A JSON body is required')
  return parseWith(schema, value)
}

export function readQuery<S extends ZodTypeAny>(c: Context, schema: S): z.infer<S> {
  return parseWith(schema, c.req.query())
}

export const uuid = (field = 'id') => z.string().uuid({ message: `${field} must be a UUID` })

/** A UUID path parameter (`:id` by default), or a 400 naming it. */
export const pathUuid = (c: Context, name = 'id'): string => parseWith(uuid(name), c.req.param(name))
