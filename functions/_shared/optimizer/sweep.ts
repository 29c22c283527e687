// The parameter sweep behind POST /api/labs/optimize: a full grid over each parameter's range
// (at most 50,000 points, SPEC Limits), keeping the best `top_n` by the calculator's objective.
// One Float64Array is reused for every point and the best list is a small sorted array, so a
// 50,000-point sweep allocates almost nothing (`npm run bench`: the labs module).
import { badRequest } from '../errors.ts'
import { type Calculator, CALCULATORS, type ParameterRange } from './calculators.ts'

export const MAX_COMBINATIONS = 50_000
export const MAX_TOP_N = 100

export interface OptimizeRequest {
  calculator: string
  top_n: number
  ranges?: Record<string, { min: number; max: number; steps: number; scale?: 'linear' | 'log' }>
}

export interface OptimizeResult {
  calculator: string
  objective: string
  goal: 'maximize' | 'minimize'
  combinations: number
  /** Points where the model applies (e.g. Paschen's law has no breakdown left of its asymptote). */
  evaluated: number
  ranges: Record<string, ParameterRange>
  results: Array<Record<string, unknown> & { rank: number; inputs: Record<string, number> }>
}

function gridPoints(r: ParameterRange): Float64Array {
  const out = new Float64Array(r.steps)
  if (r.steps === 1) {
    out[0] = r.min
    return out
  }
  const log = r.scale === 'log'
  const lo = log ? Math.log10(r.min) : r.min
  const hi = log ? Math.log10(r.max) : r.max
  for (let i = 0; i < r.steps; i++) {
    const x = lo + ((hi - lo) * i) / (r.steps - 1)
    out[i] = log ? 10 ** x : x
  }
  return out
}

/** The ranges to sweep: the calculator's defaults, each overridden by the request's. */
export function resolveRanges(
  calc: Calculator,
  given: OptimizeRequest['ranges'] = {},
): Record<string, ParameterRange> {
  for (const name of Object.keys(given)) {
    if (!(name in calc.parameters)) {
      throw badRequest(
        `ranges.${name}: not a parameter of this calculator (${Object.keys(calc.parameters).join(', ')})`,
      )
    }
  }
  const out: Record<string, ParameterRange> = {}
  for (const [name, def] of Object.entries(calc.parameters)) {
    const r = { ...def, ...given[name] }
    if (!given[name]?.scale && given[name]) r.scale = def.scale
    if (!(r.min <= r.max)) throw badRequest(`ranges.${name}: min must not exceed max`)
    if (r.scale === 'log' && !(r.min > 0)) throw badRequest(`ranges.${name}: a log scale needs min > 0`)
    if (r.min === r.max) r.steps = 1
    out[name] = r
  }
  return out
}

export function optimize(req: OptimizeRequest): OptimizeResult {
  const calc = CALCULATORS[req.calculator]
  if (!calc) {
    throw badRequest(
      `calculator: unknown calculator ${JSON.stringify(req.calculator)} (one of ${
        Object.keys(CALCULATORS).join(', ')
      })`,
    )
  }
  if (!Number.isInteger(req.top_n) || req.top_n < 1 || req.top_n > MAX_TOP_N) {
    throw badRequest(`top_n: must be an integer from 1 to ${MAX_TOP_N}`)
  }
  const ranges = resolveRanges(calc, req.ranges)
  const names = Object.keys(ranges)
  const combinations = names.reduce((n, k) => n * ranges[k].steps, 1)
  if (combinations > MAX_COMBINATIONS) {
    throw badRequest(`ranges: ${combinations} combinations; a sweep covers at most ${MAX_COMBINATIONS}`)
  }
  const axes = names.map((k) => gridPoints(ranges[k]))
  const sign = calc.goal === 'maximize' ? 1 : -1
  const topN = req.top_n
  // The best so far, best first: scores (sign·objective) and the grid index of each.
  const bestScore = new Float64Array(topN + 1)
  const bestIndex = new Int32Array(topN + 1)
  let kept = 0
  let evaluated = 0
  const point = new Float64Array(names.length)
  const digits = new Int32Array(names.length)
  for (let i = 0; i < names.length; i++) point[i] = axes[i][0]

  for (let index = 0; index < combinations; index++) {
    const value = calc.evaluate(point)
    if (value === value) { // not NaN
      evaluated++
      const score = sign * value
      if (kept < topN || score > bestScore[kept - 1]) {
        let at = kept < topN ? kept++ : topN - 1
        while (at > 0 && bestScore[at - 1] < score) {
          bestScore[at] = bestScore[at - 1]
          bestIndex[at] = bestIndex[at - 1]
          at--
        }
        bestScore[at] = score
        bestIndex[at] = index
      }
    }
    // Next grid point: an odometer over the axes, last one fastest.
    for (let d = names.length - 1; d >= 0; d--) {
      if (++digits[d] < axes[d].length) {
        point[d] = axes[d][digits[d]]
        break
      }
      digits[d] = 0
      point[d] = axes[d][0]
    }
  }

  const results = []
  for (let r = 0; r < kept; r++) {
    let rest = bestIndex[r]
    for (let d = names.length - 1; d >= 0; d--) {
      point[d] = axes[d][rest % axes[d].length]
      rest = Math.floor(rest / axes[d].length)
    }
    const inputs = Object.fromEntries(names.map((k, d) => [k, point[d]]))
    results.push({ rank: r + 1, inputs, [calc.objective]: sign * bestScore[r], ...calc.details(point) })
  }
  return {
    calculator: req.calculator,
    objective: calc.objective,
    goal: calc.goal,
    combinations,
    evaluated,
    ranges,
    results,
  }
}
