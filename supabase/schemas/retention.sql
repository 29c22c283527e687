-- =============================================================================================
-- Retention: append-only tables that stop growing
-- =============================================================================================
-- Each append-only log keeps its rows for a configurable time (private.retention_policies, one
-- row per table, seeded by the migration; `keep` null: kept for ever). The retention job
-- (pg_cron `retention`, private.run_retention) removes what is older, in bounded chunks: each
-- run deletes at most `chunk_rows` rows of each table in one short transaction and reports
-- what remains, so runs fit any time limit and a killed run loses nothing. What a monthly
-- figure, a badge or the ledger needs is kept as a rollup before its rows go:
--   ai_usage                  the monthly aggregate (ai_usage_monthly) is kept by its insert
--                             trigger and never reads ai_usage again: a purge changes no month;
--   encouragement_sent_drops  judged drops only; each sender's totals go to
--                             private.encouragement_sent_drops_purged, which the full badge
--                             recalculation adds to what is left;
--   drops_transactions        never purged (the ledger: every balance is its sum).
-- docs/performance.md ("Retention") lists each table's default and why.

create table private.retention_policies (
  table_name text primary key check (table_name in (
    'public.ai_usage', 'public.music_plays', 'public.encouragement_sent_drops', 'public.impersonation_writes',
    'private.stripe_events', 'private.email_events', 'public.labs_activity_events', 'private.encouragement_bonus_pairs')),
  keep interval check (keep is null or keep >= interval '1 day'),
  chunk_rows integer not null default 10000 check (chunk_rows between 100 and 100000),
  why text not null check (char_length(why) between 1 and 1000)
);
comment on table private.retention_policies is
  'How long each append-only table keeps its rows (keep null: for ever) and how many rows one retention run may delete from it.';

-- A sender's drops already purged, summed: the full badge recalculation adds them to the drops
-- that are left, so a purge changes no badge.
create table private.encouragement_sent_drops_purged (
  sender_id uuid primary key references public.profiles (id) on delete cascade,
  total_sent bigint not null default 0,
  successes bigint not null default 0,
  bonus bigint not null default 0,
  last_day date
);
comment on table private.encouragement_sent_drops_purged is
  'Per sender, the totals of sent drops removed by retention (kept for the badge recalculation).';

-- Purges scan by time: block-range indexes, a few pages each, for tables written in time order.
create index ai_usage_created_brin on public.ai_usage using brin (created_at);
create index encouragement_sent_drops_date_brin on public.encouragement_sent_drops using brin (date_sent);
create index impersonation_writes_created_brin on public.impersonation_writes using brin (created_at);
create index labs_activity_events_created_brin on public.labs_activity_events using brin (created_at);
create index music_plays_default_played_brin on private.music_plays_default using brin (played_at);

-- Time partitions (plain declarative partitioning, no extension): music_plays has one partition
-- per calendar month (UTC) in private, made ahead by each retention run for this month and the
-- next two; a month that already has rows in the default partition is left there (creating it
-- would have to move them). A month entirely past the keep is dropped whole.
create or replace function private.ensure_music_play_partitions(months_ahead integer default 2) returns integer
language plpgsql security definer
set search_path = ''
as $$
declare
  first_month date := date_trunc('month', now() at time zone 'UTC')::date;
  m date;
  made integer := 0;
  name text;
begin
  for i in 0 .. greatest(months_ahead, 0) loop
    m := (first_month + make_interval(months => i))::date;
    name := 'music_plays_y' || to_char(m, 'YYYY') || 'm' || to_char(m, 'MM');
    continue when to_regclass('private.' || name) is not null;
    continue when exists (select 1 from private.music_plays_default d
                           where d.played_at >= (m::timestamp at time zone 'UTC')
                             and d.played_at < ((m + interval '1 month')::timestamp at time zone 'UTC'));
    execute format('create table private.%I partition of public.music_plays for values from (%L) to (%L)',
                   name, m::timestamp at time zone 'UTC', (m + interval '1 month')::timestamp at time zone 'UTC');
    -- A partition is a table of its own, reachable by name: RLS on (no policy, so no client role
    -- reads it even if granted), as on the parent.
    execute format('alter table private.%I enable row level security', name);
    made := made + 1;
  end loop;
  return made;
end
$$;
comment on function private.ensure_music_play_partitions(integer) is
  'Makes the monthly partitions of music_plays for this month and the next months_ahead (unless the default partition holds rows of that month).';

-- Drops the monthly partitions of music_plays that end at or before the cutoff; returns the rows
-- they held.
create or replace function private.drop_music_play_partitions(cutoff timestamptz) returns integer
language plpgsql security definer
set search_path = ''
as $$
declare
  p record;
  rows_gone bigint := 0;
  n bigint;
begin
  for p in
    select c.oid::regclass as part,
           (regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz as upper_bound
      from pg_catalog.pg_inherits i join pg_catalog.pg_class c on c.oid = i.inhrelid
     where i.inhparent = 'public.music_plays'::regclass and c.relname ~ '^music_plays_y[0-9]{4}m[0-9]{2}$'
  loop
    if p.upper_bound <= cutoff then
      execute format('select count(*) from %s', p.part) into n;
      execute format('drop table %s', p.part);
      rows_gone := rows_gone + n;
    end if;
  end loop;
  return rows_gone;
end
$$;
comment on function private.drop_music_play_partitions(timestamptz) is
  'Retention: drops the monthly partitions of music_plays wholly before the cutoff.';

-- Deletes at most max_rows rows of one table older than its policy's keep (none when keep is
-- null); returns how many. Append-only guards let these deletes through (app.purging_expired,
-- set for this transaction only).
create or replace function private.purge_expired(target text, max_rows integer) returns integer
language plpgsql security definer
set search_path = ''
as $$
declare
  policy private.retention_policies;
  cutoff timestamptz;
  deleted integer := 0;
  n integer;
begin
  select * into policy from private.retention_policies p where p.table_name = target;
  if not found then
    raise exception 'table_name: no retention policy for %', target using errcode = '22023';
  end if;
  if policy.keep is null or coalesce(max_rows, 0) < 1 then
    return 0;
  end if;
  cutoff := now() - policy.keep;
  perform set_config('app.purging_expired', 'on', true);
  case target
    when 'public.ai_usage' then
      delete from public.ai_usage u
       where u.id = any (array(select x.id from public.ai_usage x where x.created_at < cutoff limit max_rows));
      get diagnostics deleted = row_count;
    when 'public.music_plays' then
      -- Whole months first (a partition dropped), then older rows of the default partition.
      deleted := private.drop_music_play_partitions(cutoff);
      delete from private.music_plays_default m
       where (m.user_id, m.played_at) in (select x.user_id, x.played_at from private.music_plays_default x
                                           where x.played_at < cutoff limit max_rows);
      get diagnostics n = row_count;
      deleted := deleted + n;
    when 'public.encouragement_sent_drops' then
      -- Judged drops only (an unjudged drop still waits for its engagement run).
      with gone as (
        delete from public.encouragement_sent_drops d
         where d.id = any (array(select x.id from public.encouragement_sent_drops x
                                  where x.date_sent < cutoff
                                    and not exists (select 1 from private.encouragement_unjudged_drops q where q.drop_id = x.id)
                                  limit max_rows))
        returning d.sender_id, d.bonus_drops_awarded, d.sent_day
      ),
      rolled as (
        insert into private.encouragement_sent_drops_purged as r (sender_id, total_sent, successes, bonus, last_day)
        select g.sender_id, count(*), count(*) filter (where g.bonus_drops_awarded > 0), sum(g.bonus_drops_awarded), max(g.sent_day)
          from gone g
         where g.sender_id is not null
         group by g.sender_id
        on conflict (sender_id) do update
          set total_sent = r.total_sent + excluded.total_sent, successes = r.successes + excluded.successes,
              bonus = r.bonus + excluded.bonus, last_day = greatest(r.last_day, excluded.last_day)
        returning 1
      )
      select count(*) into deleted from gone;
    when 'public.impersonation_writes' then
      delete from public.impersonation_writes w
       where w.id = any (array(select x.id from public.impersonation_writes x where x.created_at < cutoff limit max_rows));
      get diagnostics deleted = row_count;
    when 'public.labs_activity_events' then
      delete from public.labs_activity_events e
       where e.id = any (array(select x.id from public.labs_activity_events x where x.created_at < cutoff limit max_rows));
      get diagnostics deleted = row_count;
    when 'private.stripe_events' then
      delete from private.stripe_events s
       where s.event_id = any (array(select x.event_id from private.stripe_events x where x.received_at < cutoff limit max_rows));
      get diagnostics deleted = row_count;
    when 'private.email_events' then
      -- An event that brought inbound mail stays while the mail does (its row is the mail's).
      delete from private.email_events s
       where s.svix_id = any (array(select x.svix_id from private.email_events x
                                     where x.received_at < cutoff
                                       and not exists (select 1 from private.inbound_emails i where i.svix_id = x.svix_id)
                                     limit max_rows));
      get diagnostics deleted = row_count;
    when 'private.encouragement_bonus_pairs' then
      delete from private.encouragement_bonus_pairs b
       where (b.sender_id, b.recipient_id, b.day) in (select x.sender_id, x.recipient_id, x.day
                                                        from private.encouragement_bonus_pairs x
                                                       where x.day < (cutoff at time zone 'UTC')::date limit max_rows);
      get diagnostics deleted = row_count;
  end case;
  perform set_config('app.purging_expired', 'off', true);
  return deleted;
end
$$;
comment on function private.purge_expired(text, integer) is
  'Deletes at most max_rows rows of one table older than its retention policy''s keep (rollups first); returns how many.';

-- One run of the retention job: each table with a keep, at most its chunk_rows; logged in
-- private.job_runs with what each table lost and whether more is due. Bounded: one short
-- transaction (measured: docs/performance.md); the schedule runs it until nothing remains.
create or replace function private.run_retention() returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  started timestamptz := clock_timestamp();
  p record;
  n integer;
  total integer := 0;
  behind integer := 0;
  per_table jsonb := '{}'::jsonb;
begin
  if not private.is_trusted_caller() then
    raise exception 'only the scheduler or a super admin may run retention' using errcode = '42501';
  end if;
  perform private.ensure_music_play_partitions();
  for p in select * from private.retention_policies where keep is not null order by table_name loop
    n := private.purge_expired(p.table_name, p.chunk_rows);
    total := total + n;
    -- A full chunk: more may be due (the next run continues).
    if n = p.chunk_rows then
      behind := behind + 1;
    end if;
    per_table := per_table || jsonb_build_object(p.table_name, n);
  end loop;
  perform private.record_job_run('retention', started, total, 0, behind,
                                 jsonb_build_object('deleted', per_table, 'ms', round(extract(epoch from clock_timestamp() - started) * 1000)));
  return jsonb_build_object('deleted', per_table, 'tables_with_more_due', behind);
end
$$;
comment on function private.run_retention() is
  'The retention job (pg_cron): one bounded chunk of each table past its keep; tables_with_more_due > 0: run again.';
