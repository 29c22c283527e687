// Weekly battles: the red and blue teams' chips become robot power against the bad guy; a
// week's battle is generated on Mondays and run once, deterministically.
import { z } from '@hono/zod-openapi'
import { endpoint, orNull, routeModule } from '../../openapi.ts'
import { unwrap } from '../../../_shared/errors.ts'
import { base, logRun, pathDate, tag } from './shared.ts'

const BattleTeam = z.object({
  totalChips: z.number().int(),
  robotPower: z.number().int().describe('floor(chips*10 + members*5 + (chips/members)*20)'),
  memberCount: z.number().int(),
  members: z.array(
    z.object({
      userId: z.string(),
      chips: z.number().int(),
      name: z.string().nullable(),
      avatarUrl: z.string().nullable(),
      isAi: z.boolean(),
    }),
  ),
})
const BattleResult = z.object({
  redRobotPower: z.number().int(),
  blueRobotPower: z.number().int(),
  badGuyPower: z.number().int(),
  rounds: z.array(
    z.object({
      round: z.number().int(),
      redDamage: z.number().int(),
      blueDamage: z.number().int(),
      badGuyDamage: z.number().int(),
    }),
  ),
  redTotalDamage: z.number().int(),
  blueTotalDamage: z.number().int(),
  finalOutcome: z.string(),
})
const Battle = z.object({
  id: z.string(),
  weekStartDate: z.string(),
  weekEndDate: z.string(),
  redTeamChips: z.number().int(),
  blueTeamChips: z.number().int(),
  redTeamRobotPower: z.number().int(),
  blueTeamRobotPower: z.number().int(),
  battleStatus: z.enum(['pending', 'in_progress', 'completed']),
  winner: z.enum(['red', 'blue', 'tie']).nullable(),
  battleResult: orNull(BattleResult),
  createdAt: z.string(),
  executedAt: z.string().nullable(),
}).openapi('WorkoutBattle')

const WeekParams = z.object({ weekStartDate: pathDate('weekStartDate') })

// The replies below are the jsonb results of the battle functions, passed on as they are.
const BattleWeek = z.object({
  battle: orNull(Battle),
  redTeam: BattleTeam,
  blueTeam: BattleTeam,
  dailyStats: z.array(
    z.object({ date: z.string(), redTeamChips: z.number().int(), blueTeamChips: z.number().int() }),
  ),
})
const BattleRun = z.object({
  battle: Battle,
  winner: z.enum(['red', 'blue', 'tie']),
  battleResult: BattleResult,
  alreadyExecuted: z.boolean(),
})
const BattleHistory = z.object({
  battles: z.array(Battle),
  userStats: z.object({
    totalChipsContributed: z.number().int(),
    battlesWon: z.number().int(),
    longestChain: z.number().int(),
  }),
})
const WeeklyBattle = z.object({ battle: Battle, created: z.boolean() })

export const battleRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: `${base}/battle/week/{weekStartDate}`,
      tag,
      auth: 'bearer',
      params: WeekParams,
      summary: "A week's battle with live team totals (weekStartDate must be a Monday)",
      response: BattleWeek,
    }),
    async (c) =>
      c.json(
        unwrap(await c.var.db.rpc('workout_battle_week', { week_start: c.req.valid('param').weekStartDate })),
      ),
  )
  .openapi(
    endpoint({
      method: 'post',
      path: `${base}/battle/execute/{weekStartDate}`,
      tag,
      auth: { adminOrCron: 'workout-window' },
      params: WeekParams,
      summary: "Run a week's battle (once; deterministic, seeded by the week)",
      response: BattleRun,
    }),
    async (c) => {
      const result = unwrap(
        await c.var.db.rpc('execute_workout_battle', { week_start: c.req.valid('param').weekStartDate }),
      )
      logRun('workout-execute-battle', { week: c.req.valid('param').weekStartDate })
      return c.json(result)
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: `${base}/battle/history`,
      tag,
      auth: 'bearer',
      query: z.object({ limit: z.coerce.number().int().min(1).max(104).default(52) }).strict(),
      summary: "Battles, newest first, and the caller's stats",
      response: BattleHistory,
    }),
    async (c) =>
      c.json(unwrap(await c.var.db.rpc('workout_battle_history', { page_size: c.req.valid('query').limit }))),
  )
  .openapi(
    endpoint({
      method: 'post',
      path: `${base}/battle/cron/generate-weekly`,
      tag,
      auth: { cron: 'workout-window' },
      summary: 'Weekly battle generation (0 0 * * 1)',
      response: WeeklyBattle,
    }),
    async (c) => {
      console.log(JSON.stringify({ job: 'workout-weekly-battle', event: 'start' }))
      const result = unwrap(await c.var.db.rpc('generate_weekly_battle', { week_start: null }))
      logRun('workout-weekly-battle', result)
      return c.json(result)
    },
  )
