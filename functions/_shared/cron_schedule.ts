// pg_cron's schedule syntax and the next moment a schedule fires (UTC, as pg_cron's default
// cron.timezone): the five fields minute hour day-of-month month day-of-week, each `*`, a
// number, a range `a-b`, a step `*/n` or `a-b/n` or `a/n`, or a comma list of those; month and
// weekday names (jan, mon); weekday 7 is Sunday; `$` as the day of month is its last day; and
// pg_cron's interval form `[1-59] seconds`. As in cron, when both day fields are restricted a
// day matching either fires.

export type CronSchedule =
  | { kind: 'seconds'; seconds: number }
  | {
    kind: 'cron'
    minutes: Set<number>
    hours: Set<number>
    days: Set<number>
    lastDay: boolean
    months: Set<number>
    weekdays: Set<number>
    dayStar: boolean
    weekdayStar: boolean
  }

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']
const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat']

export class CronSyntaxError extends Error {}

function value(text: string, min: number, max: number, names?: string[]): number {
  const lower = text.toLowerCase()
  const named = names?.indexOf(lower) ?? -1
  const n = named >= 0 ? named + min : /^\d+$/.test(text) ? Number(text) : NaN
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new CronSyntaxError(`${text}: not a value from ${min} to ${max}`)
  }
  return n
}

function field(text: string, min: number, max: number, names?: string[]): { set: Set<number>; star: boolean } {
  const set = new Set<number>()
  if (text === '') throw new CronSyntaxError('an empty field')
  for (const part of text.split(',')) {
    const [range, stepText, extra] = part.split('/')
    if (extra !== undefined) throw new CronSyntaxError(`${part}: more than one step`)
    const step = stepText === undefined ? 1 : value(stepText, 1, max - min + 1)
    let lo: number
    let hi: number
    if (range === '*') {
      lo = min
      hi = max
    } else if (range.includes('-')) {
      const [a, b, more] = range.split('-')
      if (more !== undefined) throw new CronSyntaxError(`${range}: not a range`)
      lo = value(a, min, max, names)
      hi = value(b, min, max, names)
      if (hi < lo) throw new CronSyntaxError(`${range}: a range that ends before it starts`)
    } else {
      lo = value(range, min, max, names)
      hi = stepText === undefined ? lo : max // `a/n`: from a to the end, every n
    }
    for (let v = lo; v <= hi; v += step) set.add(v)
  }
  return { set, star: text.startsWith('*') }
}

/** Parses a pg_cron schedule; throws CronSyntaxError naming the faulty part. */
export function parseCron(schedule: string): CronSchedule {
  const text = schedule.trim()
  const seconds = text.match(/^(\d+)\s+seconds?$/i)
  if (seconds) {
    const n = Number(seconds[1])
    if (n < 1 || n > 59) throw new CronSyntaxError(`${text}: seconds must be from 1 to 59`)
    return { kind: 'seconds', seconds: n }
  }
  const parts = text.split(/\s+/)
  if (parts.length !== 5) throw new CronSyntaxError(`${text}: five fields expected, got ${parts.length}`)
  const [mi, ho, dm, mo, dw] = parts
  const minutes = field(mi, 0, 59)
  const hours = field(ho, 0, 23)
  const lastDay = dm === '$'
  const days = lastDay ? { set: new Set<number>(), star: false } : field(dm, 1, 31)
  const months = field(mo, 1, 12, MONTHS)
  const weekdays = field(dw, 0, 7, WEEKDAYS)
  if (weekdays.set.has(7)) weekdays.set.add(0)
  return {
    kind: 'cron',
    minutes: minutes.set,
    hours: hours.set,
    days: days.set,
    lastDay,
    months: months.set,
    weekdays: weekdays.set,
    dayStar: days.star,
    weekdayStar: weekdays.star,
  }
}

function dayMatches(s: Extract<CronSchedule, { kind: 'cron' }>, d: Date): boolean {
  const lastOfMonth = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate()
  const dom = s.lastDay ? d.getUTCDate() === lastOfMonth : s.days.has(d.getUTCDate())
  const dow = s.weekdays.has(d.getUTCDay())
  // Vixie cron, which pg_cron follows: a `*` day field defers to the other one.
  if (s.dayStar || s.weekdayStar) return dom && dow
  return dom || dow
}

/**
 * The first moment after `from` (strictly later, to the minute) the schedule fires, in UTC;
 * null when it never does within five years (a 31 February). An interval schedule fires
 * every n seconds from when pg_cron started it: the next is within n seconds of `from`.
 */
export function nextRun(schedule: string | CronSchedule, from: Date = new Date()): Date | null {
  const s = typeof schedule === 'string' ? parseCron(schedule) : schedule
  if (s.kind === 'seconds') return new Date(from.getTime() + s.seconds * 1000)
  const minutes = [...s.minutes].sort((a, b) => a - b)
  const hours = [...s.hours].sort((a, b) => a - b)
  // The next whole minute.
  const start = new Date(Math.floor(from.getTime() / 60_000) * 60_000 + 60_000)
  let day = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate()))
  for (let i = 0; i < 366 * 5 + 2; i++, day = new Date(day.getTime() + 86_400_000)) {
    if (!s.months.has(day.getUTCMonth() + 1) || !dayMatches(s, day)) continue
    const sameDay = day.getTime() === Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate())
    for (const h of hours) {
      if (sameDay && h < start.getUTCHours()) continue
      for (const m of minutes) {
        const at = new Date(day.getTime() + h * 3_600_000 + m * 60_000)
        if (at >= start) return at
      }
    }
  }
  return null
}
