// The optimizer: a grid sweep of a calculator's inputs, ranked by its objective. Pure
// computation, public, no database.
import { z } from '@hono/zod-openapi'
import { CALCULATOR_NAMES } from '../../../_shared/optimizer/calculators.ts'
import { MAX_TOP_N, optimize } from '../../../_shared/optimizer/sweep.ts'
import { endpoint, routeModule } from '../../openapi.ts'
import { plausibleNumber, Row, tag } from './shared.ts'

const Range = z.object({
  min: plausibleNumber(),
  max: plausibleNumber(),
  steps: z.number().int().min(1).max(50_000),
  scale: z.enum(['linear', 'log']).optional(),
}).strict()
const OptimizeBody = z.object({
  calculator: z.string().max(50),
  top_n: z.number().int().min(1).max(MAX_TOP_N),
  ranges: z.record(z.string().max(100), Range).optional(),
}).strict()

export const optimizerRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/optimize',
      tag,
      auth: 'none',
      body: OptimizeBody,
      summary:
        'Top N parameter sets of a calculator by its objective (a grid sweep of at most 50,000 combinations)',
      description: `Calculators: ${CALCULATOR_NAMES.join(', ')}. Pure computation: no bearer, no database.`,
      response: z.object({
        calculator: z.string(),
        objective: z.string(),
        goal: z.enum(['maximize', 'minimize']),
        combinations: z.number().int(),
        evaluated: z.number().int(),
        ranges: z.record(z.string(), Range),
        results: z.array(Row),
      }),
    }),
    (c) => c.json(optimize(c.req.valid('json'))),
  )
