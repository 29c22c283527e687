// postgres_changes subscription parameters as Supabase Realtime reads them: {event, schema,
// table, filter}, the filter being `column=op.value` with op eq, neq, lt, lte, gt, gte or in
// (`in.(a,b)`). A filter compares the change's value and the filter's value, both cast to the
// column's type, in Postgres (as realtime.check_equality_op does).

export type Action = 'INSERT' | 'UPDATE' | 'DELETE'
export type Op = 'eq' | 'neq' | 'lt' | 'lte' | 'gt' | 'gte' | 'in'

export interface Filter {
  column: string
  op: Op
  value: string // for `in`, an array literal: {a,b}
}

export interface ChangeParams {
  action: Action | '*'
  schema: string
  table: string
  filter?: Filter
}

const OPS = new Set(['eq', 'neq', 'lt', 'lte', 'gt', 'gte', 'in'])
export const SQL_OPS: Record<Op, string> = {
  eq: '=',
  neq: '!=',
  lt: '<',
  lte: '<=',
  gt: '>',
  gte: '>=',
  in: '= any',
}

export class ParamsError extends Error {}

/** One binding's parameters; throws ParamsError with Realtime's wording. */
export function parseParams(p: Record<string, unknown>): ChangeParams {
  const event = typeof p.event === 'string' ? p.event.toUpperCase() : '*'
  const action = event === 'INSERT' || event === 'UPDATE' || event === 'DELETE' ? event : '*'
  const schema = typeof p.schema === 'string' ? p.schema : undefined
  const table = typeof p.table === 'string' ? p.table : undefined
  if (schema === undefined && table === undefined) {
    throw new ParamsError(
      `No subscription params provided. Please provide at least a \`schema\` or \`table\` to subscribe to: ${
        JSON.stringify(p)
      }`,
    )
  }
  const out: ChangeParams = { action, schema: schema ?? 'public', table: table ?? '*' }
  if (typeof p.filter === 'string' && p.filter.trim() !== '') out.filter = parseFilter(p.filter.trim())
  return out
}

function parseFilter(s: string): Filter {
  const eq = s.indexOf('=')
  const column = s.slice(0, eq)
  const rest = s.slice(eq + 1)
  const dot = rest.indexOf('.')
  const op = rest.slice(0, dot)
  const value = rest.slice(dot + 1)
  if (eq <= 0 || dot <= 0 || !OPS.has(op)) {
    throw new ParamsError(
      `Error parsing \`filter\` params: ${JSON.stringify(eq > 0 ? rest.split('.') : [s])}`,
    )
  }
  if (op === 'in') {
    const m = value.match(/^\((.*)\)$/)
    if (!m) throw new ParamsError(`Error parsing \`filter\` params: ${JSON.stringify([op, value])}`)
    return { column, op, value: `{${m[1]}}` }
  }
  return { column, op: op as Op, value }
}

/** How Realtime names the parameters in its errors. */
export function describe(p: ChangeParams) {
  const filters = p.filter ? `[{"${p.filter.column}", "${p.filter.op}", "${p.filter.value}"}]` : '[]'
  return `event: ${p.action}, schema: ${p.schema}, table: ${p.table}, filters: ${filters}`
}
