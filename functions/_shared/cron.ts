// Which secret variables each scheduled endpoint group accepts in x-cron-secret, exactly as
// SPEC.md's Authentication table lists them, and a constant-time check against them.
import { createHash, timingSafeEqual } from 'node:crypto'

export type CronGroup =
  | 'workout-window'
  | 'chat'
  | 'encouragement-drops'
  | 'encouragement-drops/process-engagement'
  | 'drops'
  | 'music'
  | 'labs'
  | 'notifications'
  | 'frontend'

interface GroupRule {
  variables: string[]
  /** 'any': every listed variable that is set is accepted; 'first': the first set one only. */
  mode: 'any' | 'first'
  /** Optional secret: when unset, a super-admin or service-role bearer is accepted instead. */
  optional?: boolean
}

const encouragement = ['DROPS_CRON_SECRET', 'WORKOUT_WINDOW_CRON_SECRET', 'CHAT_CRON_SECRET']

export const CRON_GROUPS: Record<CronGroup, GroupRule> = {
  'workout-window': { variables: ['WORKOUT_WINDOW_CRON_SECRET'], mode: 'any' },
  'chat': { variables: ['CHAT_CRON_SECRET', 'WORKOUT_WINDOW_CRON_SECRET'], mode: 'first' },
  'encouragement-drops': { variables: encouragement, mode: 'any' },
  'encouragement-drops/process-engagement': {
    variables: ['ENCOURAGEMENT_DROPS_CRON_SECRET', ...encouragement],
    mode: 'any',
  },
  'drops': { variables: ['DROPS_CRON_SECRET'], mode: 'any', optional: true },
  'music': { variables: ['MUSIC_SYNC_CRON_SECRET'], mode: 'any' },
  'labs': { variables: ['LABS_CRON_SECRET', 'WORKOUT_WINDOW_CRON_SECRET'], mode: 'any' },
  'notifications': { variables: ['NOTIFICATIONS_CRON_SECRET'], mode: 'any' },
  // Frontend-hosted scheduled routes (SPEC Authentication 6): Authorization: Bearer <CRON_SECRET>.
  'frontend': { variables: ['CRON_SECRET'], mode: 'any' },
}

export type CronCheck =
  | { ok: true; variable: string }
  | { ok: false; reason: 'refused' }
  | { ok: false; reason: 'not-configured'; optional: boolean; variables: string[] }

const digest = (s: string) => createHash('sha256').update(s).digest()

/** Compares in constant time (both sides hashed first, so lengths do not leak either). */
export function secretsEqual(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected))
}

export function checkCronSecret(
  group: CronGroup,
  given: string | null | undefined,
  env: (name: string) => string | undefined,
): CronCheck {
  const rule = CRON_GROUPS[group]
  const configured = rule.variables.filter((v) => env(v))
  const accepted = rule.mode === 'first' ? configured.slice(0, 1) : configured
  if (accepted.length === 0) {
    return { ok: false, reason: 'not-configured', optional: !!rule.optional, variables: rule.variables }
  }
  let match: string | undefined
  for (const v of accepted) {
    // Every candidate is compared, so timing does not tell which one matched.
    if (secretsEqual(given ?? '', env(v)!) && given) match ??= v
  }
  return match ? { ok: true, variable: match } : { ok: false, reason: 'refused' }
}
