// GoTrue's rate limits ([auth.rate_limit] in config.toml), counted in local_auth.rate_limit_hits
// so they hold across gateway restarts. Each limit is N events per window per key (an IP, or
// the whole project for e-mails sent).
import { tooMany } from './errors.ts'
import type { Sql } from './users.ts'

/** Records one event, or throws 429 when `limit` events already happened in the window. */
export async function takeToken(
  sql: Sql,
  kind: string,
  key: string,
  limit: number,
  windowSeconds: number,
  error = tooMany('over_request_rate_limit', 'Request rate limit reached'),
) {
  const [{ allowed }] = await sql`
    with recent as (
      select count(*) as n from local_auth.rate_limit_hits
      where kind = ${kind} and key = ${key} and at > now() - make_interval(secs => ${windowSeconds})
    ), hit as (
      insert into local_auth.rate_limit_hits (kind, key)
      select ${kind}, ${key} from recent where n < ${limit}
      returning 1
    )
    select exists (select 1 from hit) as allowed`
  if (!allowed) throw error
  // Old events are forgotten now and then (the table stays small).
  if (Math.random() < 0.02) {
    await sql`delete from local_auth.rate_limit_hits where at < now() - interval '1 day'`
  }
}

export const FIVE_MINUTES = 300
export const ONE_HOUR = 3600
