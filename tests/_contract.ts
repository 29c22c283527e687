// The API contract, checked on every reply the tests receive: each /api reply must be one the
// route declares in GET /api/openapi.json (its status documented, its Content-Type one the
// document names, its body valid against that status's JSON Schema and without fields the
// schema does not name), so a reply that drifts from the document a client generator reads
// fails the test that made the request.
import { type Schema, Validator } from '@cfworker/json-schema'

// deno-lint-ignore no-explicit-any
type Json = any

interface Operation {
  template: string
  /** Literal segments as strings, parameters as null: the most literal template wins. */
  segments: (string | null)[]
  responses: Record<string, { content?: Record<string, { schema?: Json }> }>
}

interface Contract {
  operations: Map<string, Operation[]>
  defs: Record<string, Json>
  validators: Map<string, Validator>
}

let loading: Promise<Contract> | undefined

/** The document's `#/components/schemas/X` references, as `#/$defs/X` for a plain JSON Schema. */
function asJsonSchema(node: Json): Json {
  if (Array.isArray(node)) return node.map(asJsonSchema)
  if (!node || typeof node !== 'object') return node
  const out: Json = {}
  for (const [k, v] of Object.entries(node)) {
    out[k] = k === '$ref' && typeof v === 'string'
      ? v.replace('#/components/schemas/', '#/$defs/')
      : asJsonSchema(v)
  }
  return out
}

async function load(baseUrl: string): Promise<Contract> {
  const res = await fetch(`${baseUrl}/api/openapi.json`)
  if (!res.ok) throw new Error(`contract: GET /api/openapi.json answered ${res.status}`)
  const doc = await res.json()
  const operations = new Map<string, Operation[]>()
  for (const [template, ops] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
    for (const [method, op] of Object.entries(ops)) {
      const list = operations.get(method.toUpperCase()) ?? []
      const segments = template.split('/').slice(1).map((s) => (/^\{\w+\}$/.test(s) ? null : s))
      list.push({ template, segments, responses: op.responses ?? {} })
      operations.set(method.toUpperCase(), list)
    }
  }
  return { operations, defs: asJsonSchema(doc.components?.schemas ?? {}), validators: new Map() }
}

/** The operation a request reaches: the template whose segments match, literal before parameter. */
function operationFor(contract: Contract, method: string, path: string): Operation | undefined {
  const parts = path.split('/').slice(1).map((s) => {
    try {
      return decodeURIComponent(s)
    } catch {
      return s
    }
  })
  const candidates = (contract.operations.get(method) ?? []).filter((op) =>
    op.segments.length === parts.length &&
    op.segments.every((s, i) => s === null ? parts[i] !== '' : s === parts[i])
  )
  const literalFirst = (a: Operation, b: Operation) => {
    for (let i = 0; i < a.segments.length; i++) {
      if ((a.segments[i] === null) !== (b.segments[i] === null)) return a.segments[i] === null ? 1 : -1
    }
    return 0
  }
  return candidates.sort(literalFirst)[0]
}

function validatorFor(contract: Contract, key: string, schema: Json): Validator {
  let v = contract.validators.get(key)
  if (!v) {
    v = new Validator({ ...asJsonSchema(schema), $defs: contract.defs } as Schema, '2020-12', false)
    contract.validators.set(key, v)
  }
  return v
}

/**
 * Fields of `value` its schema does not name (JSON Schema lets an object carry more than its
 * `properties` unless told otherwise, so validation alone would not see them): a field a
 * generated client has no type for. Records (`additionalProperties: {...}`) and free-form
 * values (`{}`) are open on purpose.
 */
function undocumentedFields(contract: Contract, schema: Json, value: unknown, at: string, out: string[]) {
  if (!schema || typeof schema !== 'object' || value === null || typeof value !== 'object') return
  const resolve = (s: Json) => (s?.$ref ? contract.defs[s.$ref.split('/').pop()] : s)
  if (schema.$ref) return undocumentedFields(contract, resolve(schema), value, at, out)
  const branches = schema.anyOf ?? schema.oneOf
  if (branches) {
    const fits = branches.find((b: Json) =>
      validatorFor(contract, `branch ${JSON.stringify(b)}`, b).validate(value).valid
    )
    return undocumentedFields(contract, fits, value, at, out)
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => undocumentedFields(contract, schema.items, v, `${at}/${i}`, out))
    return
  }
  // allOf parts (a component and what a route adds to it) describe one object together.
  const parts: Json[] = [schema, ...(schema.allOf ?? []).map(resolve)]
  const named = new Map<string, Json>()
  for (const part of parts) for (const [k, v] of Object.entries(part.properties ?? {})) named.set(k, v)
  const record = parts.find((p) => p.additionalProperties && typeof p.additionalProperties === 'object')
    ?.additionalProperties
  const freeForm = !named.size && !record
  for (const [k, v] of Object.entries(value)) {
    const sub = named.get(k) ?? record
    if (sub) undocumentedFields(contract, sub, v, `${at}/${k}`, out)
    else if (!freeForm) out.push(`${at}/${k}`)
  }
}

export interface ReceivedReply {
  status: number
  headers: Headers
  /** The body as text ('' when there was none); binary bodies are checked by type only. */
  text: string | null
}

/**
 * Throws when the reply is not one the document declares for the request. Requests that reach
 * no documented operation (unknown paths, methods a path does not serve, preflights) are the
 * router's 404/204 and are not checked here.
 */
export async function checkReply(
  baseUrl: string,
  requestMethod: string,
  url: string,
  reply: ReceivedReply,
): Promise<void> {
  const method = requestMethod.toUpperCase()
  const path = new URL(url, 'http://x').pathname
  if (!path.startsWith('/api/') || method === 'OPTIONS' || method === 'HEAD') return
  loading ??= load(baseUrl).catch((e) => {
    loading = undefined // a stack that was briefly down is asked again next time
    throw e
  })
  const contract = await loading
  const op = operationFor(contract, method, path)
  if (!op) return
  const where = `${method} ${op.template} → ${reply.status}`
  // CONTRACT_LOG=<file>: which operations and statuses the tests reached, one line per reply.
  const log = Deno.env.get('CONTRACT_LOG')
  if (log) await Deno.writeTextFile(log, `${method} ${op.template} ${reply.status}\n`, { append: true })
  const shortBody = () => (reply.text ?? '').slice(0, 600)
  const declared = op.responses[String(reply.status)]
  if (!declared) {
    throw new Error(
      `contract: ${where} is not a documented status (${
        Object.keys(op.responses).join(', ')
      }); body ${shortBody()}`,
    )
  }
  const type = (reply.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase()
  const content = declared.content ?? {}
  if (!Object.keys(content).length) {
    if (reply.text) throw new Error(`contract: ${where} declares no body, got ${type}: ${shortBody()}`)
    return
  }
  const media = content[type] ??
    Object.entries(content).find(([t]) => t.endsWith('/*') && type.startsWith(t.slice(0, -1)))?.[1]
  if (!media) {
    throw new Error(
      `contract: ${where} declares ${Object.keys(content).join(', ')}, got Content-Type "${type}"`,
    )
  }
  if (type !== 'application/json' || !media.schema) return
  let body: unknown
  try {
    body = JSON.parse(reply.text ?? '')
  } catch {
    throw new Error(`contract: ${where} is not JSON: ${shortBody()}`)
  }
  const result = validatorFor(contract, `${method} ${op.template} ${reply.status}`, media.schema).validate(
    body,
  )
  if (!result.valid) {
    // The innermost errors say what is wrong; the outer ones repeat "properties did not match".
    const inner = result.errors.filter((e) =>
      !/did not match|failed validation|does not match any/i.test(e.error)
    )
    const shown = (inner.length ? inner : result.errors).slice(0, 6).map((e) =>
      `${e.instanceLocation}: ${e.error}`
    )
    throw new Error(
      `contract: ${where} does not match its schema:\n  ${shown.join('\n  ')}\nbody: ${shortBody()}`,
    )
  }
  const extra: string[] = []
  undocumentedFields(contract, media.schema, body, '', extra)
  if (extra.length) {
    throw new Error(
      `contract: ${where} sends fields its schema does not name: ${
        extra.slice(0, 8).join(', ')
      }\nbody: ${shortBody()}`,
    )
  }
}
