// The write rate limit's defaults (300 writes per 5 minutes per user, 100 per anonymous address:
// the migration's rows) are for people. The test and bench stacks are one machine where every
// anonymous caller is 127.0.0.1 and where suites write in bursts no person makes (the payments
// storm, the benches' loops): their defaults are raised so they never refuse. Tests and benches
// of the limit itself set rows for their own users and addresses (docs/rate_limits.md).
import postgres from 'postgres'

export const LOAD_WRITE_LIMIT = 1_000_000

export async function raiseWriteLimitsForLoad(dbUrl: string) {
  const sql = postgres(dbUrl, { max: 1, onnotice: () => {} })
  try {
    await sql`update private.write_rate_limits set max_writes = ${LOAD_WRITE_LIMIT} where subject = '*'`
  } finally {
    await sql.end()
  }
}
