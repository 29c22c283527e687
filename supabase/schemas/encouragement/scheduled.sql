-- =============================================================================================
-- Encouragement drops: the scheduled jobs
-- =============================================================================================
-- Engagement (baselines, judging, bonuses) and the AI jobs behind the daily assistant drop and
-- note analysis (routes/encouragement/scheduled.ts). The area's overview: encouragement/shared.sql.

-- ---------------------------------------------------------------------------------------------
-- Engagement against the recipient's baseline.
-- ---------------------------------------------------------------------------------------------

-- With W = engagement_window_hours and the baseline period B = 7 W before the drop (7 days
-- at the default 24 h), a drop is engaged when its recipient
--   (a) is established: their account was created at least B before the drop, and they had
--       written a journal entry or a goal check-in at some time before it; and
--   (b) became more active than usual: their entries and check-ins in (date_sent,
--       date_sent + W] outnumber their average per window over [date_sent - B, date_sent],
--       i.e. they reach floor(baseline count / 7) + 1.
-- engaged_at is the time of the activity that reached that count. A fresh account (the
-- sockpuppet) and a regular who only kept their usual pace earn the sender nothing; someone
-- who was quiet and wrote again, or wrote more than usual, does.
--
-- (a) and the baseline count are frozen when the drop is written, in a table no client role
-- can read or write: counted when the job ran, they counted the rows that still existed, so
-- a recipient could delete their history after the drop to make one entry "more than usual".
-- Not columns of the drop: its sender reads the drop (and the send RPC returns it), and the
-- recipient's activity count is not theirs to see.
create table private.encouragement_drop_baselines (
  drop_id uuid primary key references public.encouragement_sent_drops (id) on delete cascade,
  activity integer not null check (activity >= 0),
  established boolean not null
);
comment on table private.encouragement_drop_baselines is
  'Each sent drop''s recipient baseline, frozen when the drop was written: their entries and goal check-ins over the 7 windows before it, and whether they were established (account at least 7 windows old, activity before it). Written only by private.freeze_engagement_baselines.';

create or replace function private.freeze_engagement_baselines(drop_ids uuid[]) returns integer
language sql
set search_path = ''
as $$
  with cfg as (select 7 * make_interval(hours => c.engagement_window_hours) as b from public.encouragement_config c),
  frozen as (
    insert into private.encouragement_drop_baselines (drop_id, activity, established)
    select d.id, a.n,
           r.created_at <= d.date_sent - cfg.b
           and (a.n > 0
                or exists (select 1 from public.journal_entries e
                            where e.user_id = d.recipient_id and e.created_at < d.date_sent - cfg.b)
                or exists (select 1 from public.goal_check_ins g
                            where g.user_id = d.recipient_id and g.created_at < d.date_sent - cfg.b))
      from public.encouragement_sent_drops d
      cross join cfg
      join public.profiles r on r.id = d.recipient_id
      cross join lateral (
        select ((select count(*) from public.journal_entries e
                  where e.user_id = d.recipient_id and e.created_at >= d.date_sent - cfg.b and e.created_at <= d.date_sent)
              + (select count(*) from public.goal_check_ins g
                  where g.user_id = d.recipient_id and g.created_at >= d.date_sent - cfg.b and g.created_at <= d.date_sent)
               )::integer as n) a
     where d.id = any (drop_ids)
    on conflict (drop_id) do nothing
    returning 1)
  select count(*)::integer from frozen
$$;
comment on function private.freeze_engagement_baselines(uuid[]) is
  'Freezes the recipient baseline of the given drops as of their date_sent (once: an existing baseline is kept). Run for every drop as it is written.';

-- Queues drops for engagement processing with what judging reads: the drop's parties, day and
-- kind, and its frozen baseline (a drop without one is not established: never engaged).
create or replace function private.queue_unjudged_drops(drop_ids uuid[]) returns integer
language sql
set search_path = ''
as $$
  with queued as (
    insert into private.encouragement_unjudged_drops
           (drop_id, date_sent, sent_day, sender_id, recipient_id, is_system, baseline_activity, baseline_established)
    select d.id, d.date_sent, d.sent_day, d.sender_id, d.recipient_id, d.is_system,
           coalesce(b.activity, 0), coalesce(b.established, false)
      from public.encouragement_sent_drops d
      left join private.encouragement_drop_baselines b on b.drop_id = d.id
     where d.id = any (drop_ids)
    on conflict (drop_id) do nothing
    returning 1)
  select count(*)::integer from queued
$$;
comment on function private.queue_unjudged_drops(uuid[]) is
  'Queues these drops for engagement processing (once), with their parties, day, kind and frozen baseline. Run after the baselines are frozen.';

-- Every path that writes a drop (send_encouragement_drop, send_assistant_drop) freezes its
-- baseline in the same statement: a statement trigger, so a bulk insert stays one query.
create or replace function private.freeze_sent_drop_baselines() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  ids constant uuid[] := array(select s.id from sent s);
begin
  perform private.freeze_engagement_baselines(ids);
  perform private.queue_unjudged_drops(ids);
  return null;
end
$$;
comment on function private.freeze_sent_drop_baselines() is
  'After drops are written: freezes their recipients'' baselines and queues them for engagement processing.';

create trigger encouragement_sent_drops_freeze_baseline after insert on public.encouragement_sent_drops
  referencing new table as sent
  for each statement execute function private.freeze_sent_drop_baselines();

-- The queue row copies the drop: a drop whose date_sent is changed (fixtures, support) keeps its
-- place right, and a sender who deletes their account (sender_id set null) is no longer paid.
create or replace function private.requeue_moved_sent_drop() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  update private.encouragement_unjudged_drops q
     set date_sent = new.date_sent, sent_day = new.sent_day, sender_id = new.sender_id,
         recipient_id = new.recipient_id, is_system = new.is_system
   where q.drop_id = new.id;
  return null;
end
$$;
comment on function private.requeue_moved_sent_drop() is
  'After a drop''s date_sent, sent_day, sender, recipient or kind changes: its row in the engagement queue follows.';

create trigger encouragement_sent_drops_requeue
  after update of date_sent, sent_day, sender_id, recipient_id, is_system on public.encouragement_sent_drops
  for each row when (old.date_sent is distinct from new.date_sent or old.sent_day is distinct from new.sent_day
                     or old.sender_id is distinct from new.sender_id or old.recipient_id is distinct from new.recipient_id
                     or old.is_system is distinct from new.is_system)
  execute function private.requeue_moved_sent_drop();

-- ---------------------------------------------------------------------------------------------
-- Pruning the bonus pairs.
-- ---------------------------------------------------------------------------------------------

-- A pair (sender, recipient, day) is read only when a drop of that send day is judged, and
-- only unjudged drops are (new ones are sent today). So a pair older than every unjudged
-- drop can never be consulted again; keeping at least the last 8 days (the longest window,
-- 168 h, plus a day) also leaves the recent ones to look at. The hourly engagement run
-- deletes at most 50,000 a run (more than a day of bonuses at any realistic scale).
create index encouragement_bonus_pairs_by_day on private.encouragement_bonus_pairs (day);

create or replace function private.prune_encouragement_bonus_pairs(max_rows integer) returns integer
language plpgsql
set search_path = ''
as $$
declare
  oldest_open date;
  cutoff date;
  pruned integer;
begin
  if max_rows is null or max_rows < 1 then
    raise exception 'max_rows: must be at least 1' using errcode = '22023';
  end if;
  -- A day's margin: sent_day is the UTC day of date_sent when the drop is written.
  select (min(q.date_sent) at time zone 'UTC')::date - 1 into oldest_open
    from private.encouragement_unjudged_drops q;
  cutoff := least(coalesce(oldest_open, private.utc_today()), private.utc_today() - 8);
  delete from private.encouragement_bonus_pairs p
   where p.ctid = any (array(
     select q.ctid from private.encouragement_bonus_pairs q where q.day < cutoff limit max_rows));
  get diagnostics pruned = row_count;
  return pruned;
end
$$;
comment on function private.prune_encouragement_bonus_pairs(integer) is
  'Deletes up to max_rows bonus pairs of days before both the oldest unjudged drop''s day and the last 8 days (no judgement can read them any more). Called by each engagement run.';

-- ---------------------------------------------------------------------------------------------
-- Judging engagement
-- ---------------------------------------------------------------------------------------------

-- Judges the drops whose engagement window has closed: a drop is engaged when the recipient's
-- activity after it beats the baseline frozen when it was sent (a drop without one never is).
-- Pays the engagement bonus (once per sender, recipient and day), updates the badges, and
-- prunes the bonus pairs no drop can need any more.
create or replace function private.process_encouragement_engagement(max_drops integer) returns jsonb
language plpgsql security definer
set search_path = ''
set work_mem = '64MB'
set jit = off
set plan_cache_mode = force_custom_plan
as $$
declare
  started constant timestamptz := clock_timestamp();
  today constant date := private.utc_today();
  cfg public.encouragement_config;
  window_length interval;
  judged integer;
  engaged integer;
  paid integer;
  paid_senders uuid[];
  paid_counts integer[];
  paid_bonus integer[];
  full_senders uuid[];
  recent_since timestamptz;
  recent integer;
  remaining integer;
  pruned integer;
  result jsonb;
begin
  if not private.is_trusted_caller() then
    raise exception 'only super admins and the scheduler may run engagement processing' using errcode = '42501';
  end if;
  if max_drops is null or max_drops < 1 then
    raise exception 'max_drops: must be at least 1' using errcode = '22023';
  end if;
  raise log 'process-engagement: start (at most % drops)', max_drops;
  select * into cfg from public.encouragement_config;
  window_length := make_interval(hours => cfg.engagement_window_hours);

  -- A chunk: the oldest unjudged drops that no other run holds (skip locked: walkers side by
  -- side take disjoint chunks, and a drop judged by a run that committed meanwhile is
  -- re-checked under its lock and left out).
  -- The queue rows carry what judging reads: the drops themselves are not fetched.
  with candidates as (
    select q.drop_id as id, q.sender_id, q.recipient_id, q.sent_day, q.date_sent, q.is_system,
           q.baseline_activity, q.baseline_established
      from private.encouragement_unjudged_drops q
     order by q.date_sent, q.drop_id
     limit max_drops
       for update skip locked
  ),
  observed as materialized (
    -- The activity that passed the frozen baseline: one range scan per table over the window.
    select c.id, c.sender_id, c.recipient_id, c.sent_day, c.date_sent, c.is_system,
           case when c.baseline_established then (
             select t.at
               from (select e.created_at as at from public.journal_entries e
                      where e.user_id = c.recipient_id
                        and e.created_at > c.date_sent and e.created_at <= c.date_sent + window_length
                     union all
                     select g.created_at from public.goal_check_ins g
                      where g.user_id = c.recipient_id
                        and g.created_at > c.date_sent and g.created_at <= c.date_sent + window_length) t
              order by t.at
             offset c.baseline_activity / 7 limit 1)
           end as engaged_at
      from candidates c
  ),
  judged_drops as (
    select o.* from observed o where o.engaged_at is not null or o.date_sent + window_length <= now()
  ),
  eligible as (
    select j.* from judged_drops j
     where j.engaged_at is not null and not j.is_system and j.sender_id <> j.recipient_id
       -- A probe per engaged drop (as `not exists`, planned as a scan of every profile).
       and not coalesce((select r.is_ai from public.profiles r where r.id = j.recipient_id), false)
  ),
  winners as (
    insert into private.encouragement_bonus_pairs (sender_id, recipient_id, day, drop_id)
    select distinct on (e.sender_id, e.recipient_id, e.sent_day) e.sender_id, e.recipient_id, e.sent_day, e.id
      from eligible e
     order by e.sender_id, e.recipient_id, e.sent_day, e.date_sent, e.id
    on conflict do nothing
    returning drop_id, sender_id
  ),
  verdicts as materialized (
    select j.id, j.sender_id, j.engaged_at, case when w.drop_id is null then 0 else cfg.bonus_per_engagement end as bonus
      from judged_drops j
      left join winners w on w.drop_id = j.id
  ),
  -- Judged: out of the queue. Only engaged drops are written (a drop not engaged keeps its
  -- defaults, null and 0), by primary key (= any of the ids: an index scan; joined with the
  -- verdicts alone, the planner hashed the whole table for each chunk).
  dequeued as (
    delete from private.encouragement_unjudged_drops q
     where q.drop_id = any (array(select v.id from verdicts v))
    returning 1
  ),
  marked as (
    update public.encouragement_sent_drops s
       set engaged_at = v.engaged_at,
           bonus_drops_awarded = v.bonus
      from verdicts v
     where s.id = any (array(select x.id from verdicts x where x.engaged_at is not null)) and s.id = v.id
    returning 1
  ),
  per_sender as (
    select v.sender_id, count(*)::integer as n, sum(v.bonus)::integer as bonus
      from verdicts v where v.bonus > 0
     group by v.sender_id
  ),
  credited as (
    insert into public.encouragement_daily_drops as d (user_id, day, daily_allowance, bonus_earned)
    select p.sender_id, today, cfg.daily_allowance, p.bonus from per_sender p order by p.sender_id
    on conflict (user_id, day) do update set bonus_earned = d.bonus_earned + excluded.bonus_earned
    returning d.user_id
  )
  select (select count(*) from dequeued), (select count(*) from marked),
         (select count(*) from verdicts where bonus > 0),
         (select array_agg(p.sender_id order by p.sender_id) from per_sender p),
         (select array_agg(p.n order by p.sender_id) from per_sender p),
         (select array_agg(p.bonus order by p.sender_id) from per_sender p)
    into judged, engaged, paid, paid_senders, paid_counts, paid_bonus;

  -- Badges: the paid senders' successes and bonus are added to their badges (those without a
  -- badge yet, and everyone who sent since the previous run started (a minute of margin, at
  -- most two hours back), are recalculated in full; sends recalculate already, this catches one
  -- that raced a run). Since the previous run, not simply the last two hours: at 1,000,000
  -- users two hours of sends are some 80,000 senders, which every chunk of every walker would
  -- recalculate again. A streak that ended needs no run: readers show 0 once last_sent_day is
  -- before yesterday.
  -- Every badge both calls write is locked first, in one ordered batch: locked in two batches
  -- (paid, then recent senders), two walkers side by side deadlocked on each other's.
  -- (Each statement is planned with the run's values, plan_cache_mode above: a generic plan of
  -- `date_sent > $1`, a third of the queue by its estimate, scanned the whole queue.)
  recent_since := greatest(now() - interval '2 hours',
                           (select max(j.started_at) from private.job_runs j where j.job = 'process-engagement')
                           - interval '1 minute');
  full_senders := array(
    select u from unnest(coalesce(paid_senders, '{}')) u
     where not exists (select 1 from public.encouragement_badges b where b.user_id = u)
    union
    select q.sender_id from private.encouragement_unjudged_drops q
     where q.date_sent > recent_since and not q.is_system and q.sender_id is not null);
  perform private.lock_encouragement_badges(coalesce(paid_senders, '{}') || full_senders);
  recent := private.recalculate_encouragement_badges(paid_senders, paid_counts, paid_bonus);
  recent := recent + private.recalculate_encouragement_badges(full_senders);

  pruned := private.prune_encouragement_bonus_pairs(50000);

  -- Counted up to 10,000 (a larger backlog reads as 10,000): a walker only needs to know
  -- whether to go on, and counting a backlog of 1,000,000 after every chunk cost more than it.
  select count(*) into remaining
    from (select 1 from private.encouragement_unjudged_drops q
           where q.date_sent <= now() - window_length limit 10000) x;
  result := jsonb_build_object('judged', judged, 'engaged', engaged, 'bonuses_awarded', paid,
                               'badges_recalculated', recent, 'remaining', remaining,
                               'bonus_pairs_pruned', pruned,
                               'duration_ms', round(extract(epoch from clock_timestamp() - started) * 1000));
  insert into private.job_runs (job, started_at, succeeded, failed, remaining, details)
  values ('process-engagement', started, judged, 0, remaining, result);
  raise log 'process-engagement: done %', result;
  return result;
end
$$;
comment on function private.process_encouragement_engagement(integer) is
  'Judges due drops against each recipient''s baseline frozen at sending (established account, more activity in the window than their average per window over the 7 windows before), pays bonuses once per pair and day, recalculates badges, prunes old bonus pairs.';
grant execute on function private.process_encouragement_engagement(integer) to authenticated, service_role;

create or replace function public.process_encouragement_engagement(max_drops integer default 10000) returns jsonb
language sql
set search_path = ''
as $$ select private.process_encouragement_engagement(max_drops) $$;
comment on function public.process_encouragement_engagement(integer) is
  'Judges one chunk of due drops (at most max_drops, default 10,000: a transaction of 1-3 s), pays bonuses once, recalculates badges of paid and recent senders. Walkers side by side take disjoint chunks. Super admins, the service role, pg_cron. Returns {judged, engaged, bonuses_awarded, badges_recalculated, remaining (counted up to 10,000), duration_ms}.';
grant execute on function process_encouragement_engagement(integer) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Note analysis
-- ---------------------------------------------------------------------------------------------

create table public.note_analyses (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references public.profiles (id) on delete cascade,
  analysis_date date not null,
  summary text not null,
  mood_trends jsonb not null default '{}'::jsonb check (jsonb_typeof(mood_trends) = 'object'),
  topics jsonb not null default '[]'::jsonb check (jsonb_typeof(topics) = 'array'),
  patterns jsonb not null default '[]'::jsonb check (jsonb_typeof(patterns) = 'array'),
  recommendations jsonb not null default '[]'::jsonb check (jsonb_typeof(recommendations) = 'array'),
  insights jsonb not null default '{}'::jsonb check (jsonb_typeof(insights) = 'object'),
  entry_count integer not null check (entry_count between 1 and 50),
  created_at timestamptz not null default now(),
  constraint note_analyses_one_a_day unique (user_id, analysis_date)
);
alter table public.note_analyses enable row level security;
comment on table public.note_analyses is
  'One analysis of a user''s recent entries per UTC day (SPEC Note analysis); read by its user (and super admins).';
revoke all on public.note_analyses from anon, authenticated, service_role;
grant select on public.note_analyses to authenticated, service_role;

create policy "note_analyses: owners and super admins read" on public.note_analyses
  for select to authenticated using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- ---------------------------------------------------------------------------------------------
-- AI job queue
-- ---------------------------------------------------------------------------------------------

-- AI job queue: each invocation of an AI job claims a bounded chunk of today's due users
-- (for update skip locked), so runs fit an edge function's time limit and run side by side.
-- A claim is a lease: a chunk whose worker died is claimable again after 10 minutes. Each
-- user is tried once a day; failures are reported, not retried the same day.
create table private.ai_job_queue (
  job text not null check (job in ('analyze-notes', 'generate-daily-drops')),
  day date not null,
  user_id uuid not null references public.profiles (id) on delete cascade,
  status text not null default 'pending' check (status in ('pending', 'running', 'done', 'skipped', 'failed')),
  attempts integer not null default 0,
  queued_at timestamptz not null default now(),
  claimed_at timestamptz,
  finished_at timestamptz,
  error text,
  primary key (job, day, user_id)
);
comment on table private.ai_job_queue is 'Due users of the AI jobs per UTC day and their outcome.';

create index ai_job_queue_open on private.ai_job_queue (job, day, user_id) where status in ('pending', 'running');

create index ai_job_queue_user on private.ai_job_queue (user_id);

-- Adds today's due users not queued yet (idempotent, set-based).
create or replace function private.enqueue_ai_job(job_name text) returns void
language plpgsql security definer
set search_path = ''
as $$
declare
  today constant date := private.utc_today();
begin
  -- A week of outcomes is kept for inspection; older days go (a range of the primary key).
  delete from private.ai_job_queue q where q.job = job_name and q.day < today - 7;
  if job_name = 'analyze-notes' then
    insert into private.ai_job_queue (job, day, user_id)
    select job_name, today, p.id from public.profiles p
     where p.read_notes_enabled and p.is_active and p.id <> private.assistant_user_id()
       and exists (select 1 from public.journal_entries e where e.user_id = p.id and e.created_at >= now() - interval '7 days')
       and not exists (select 1 from public.note_analyses a where a.user_id = p.id and a.analysis_date = today)
       and not exists (select 1 from private.ai_job_queue q where q.job = job_name and q.day = today and q.user_id = p.id)
    on conflict do nothing;
  elsif job_name = 'generate-daily-drops' then
    insert into private.ai_job_queue (job, day, user_id)
    select job_name, today, p.id from public.profiles p
     where p.read_notes_enabled and p.check_in_enabled and p.is_active and not p.is_ai
       and p.id <> private.assistant_user_id()
       and not exists (select 1 from public.encouragement_sent_drops d
                        where d.recipient_id = p.id and d.sent_day = today and d.is_system)
       and not exists (select 1 from private.ai_job_queue q where q.job = job_name and q.day = today and q.user_id = p.id)
    on conflict do nothing;
  else
    raise exception 'job: unknown job %', job_name using errcode = '22023';
  end if;
end
$$;

-- How many of today's users an AI job still has to do (pending or running).
create or replace function private.ai_job_remaining(job_name text) returns integer
language sql stable security definer
set search_path = ''
as $$
  select count(*)::integer from private.ai_job_queue q
   where q.job = job_name and q.day = private.utc_today() and q.status in ('pending', 'running')
$$;

-- Claims up to chunk_size due users and returns what each needs:
--   analyze-notes:        {user_id, entries: [{title, content, mood, tags, created_at}] (7 days, at most 50)}
--   generate-daily-drops: {user_id, full_name, analysis: {...} | null}  (the latest analysis)
-- and {remaining}: due users not finished after this claim (this chunk included).
create or replace function private.claim_ai_job_chunk(job_name text, chunk_size integer) returns jsonb
language plpgsql security definer
set search_path = ''
set jit = off
as $$
declare
  today constant date := private.utc_today();
  claimed uuid[];
  users jsonb;
begin
  if not private.is_trusted_caller() then
    raise exception 'only the scheduler may claim job chunks' using errcode = '42501';
  end if;
  if chunk_size is null or chunk_size not between 1 and 500 then
    raise exception 'chunk_size: must be between 1 and 500' using errcode = '22023';
  end if;
  perform private.enqueue_ai_job(job_name);
  with picked as (
    select q.user_id from private.ai_job_queue q
     where q.job = job_name and q.day = today
       and (q.status = 'pending' or (q.status = 'running' and q.claimed_at < now() - interval '10 minutes'))
     order by q.user_id
     limit chunk_size
       for update skip locked
  ),
  taken as (
    update private.ai_job_queue q set status = 'running', claimed_at = now(), attempts = q.attempts + 1
      from picked where q.job = job_name and q.day = today and q.user_id = picked.user_id
    returning q.user_id
  )
  select coalesce(array_agg(user_id order by user_id), '{}') into claimed from taken;

  if job_name = 'analyze-notes' then
    select coalesce(jsonb_agg(jsonb_build_object('user_id', u.id, 'entries', coalesce(x.entries, '[]'::jsonb)) order by u.id), '[]')
      into users
      from unnest(claimed) u(id)
      left join lateral (
        select jsonb_agg(jsonb_build_object('title', e.title, 'content', c.content, 'mood', e.mood, 'tags', e.tags,
                                            'created_at', e.created_at) order by e.created_at) as entries
          from (select * from public.journal_entries e
                 where e.user_id = u.id and e.created_at >= now() - interval '7 days'
                 order by e.created_at desc limit 50) e
          left join public.journal_entry_contents c on c.entry_id = e.id
      ) x on true;
  else
    select coalesce(jsonb_agg(jsonb_build_object('user_id', u.id, 'full_name', p.full_name, 'analysis', a.analysis) order by u.id), '[]')
      into users
      from unnest(claimed) u(id)
      join public.profiles p on p.id = u.id
      left join lateral (
        select jsonb_build_object('analysis_date', n.analysis_date, 'summary', n.summary, 'mood_trends', n.mood_trends,
                                  'topics', n.topics, 'patterns', n.patterns, 'recommendations', n.recommendations,
                                  'insights', n.insights) as analysis
          from public.note_analyses n where n.user_id = u.id order by n.analysis_date desc limit 1
      ) a on true;
  end if;
  return jsonb_build_object('users', users, 'remaining', private.ai_job_remaining(job_name));
end
$$;
grant execute on function private.claim_ai_job_chunk(text,integer) to service_role;

create or replace function public.claim_ai_job_chunk(job_name text, chunk_size integer default 50) returns jsonb
language sql
set search_path = ''
as $$ select private.claim_ai_job_chunk(job_name, chunk_size) $$;
comment on function public.claim_ai_job_chunk(text, integer) is
  'Edge jobs (service role): claims up to chunk_size of today''s due users of analyze-notes or generate-daily-drops; {users, remaining}.';
grant execute on function claim_ai_job_chunk(text,integer) to service_role;

-- Records the outcome of one user's item of an AI job today (done or failed, with the error).
create or replace function private.finish_ai_job_item(job_name text, target_user uuid, outcome text, failure text) returns void
language sql security definer
set search_path = ''
as $$
  update private.ai_job_queue q set status = outcome, finished_at = now(), error = left(failure, 500)
   where q.job = job_name and q.day = private.utc_today() and q.user_id = target_user
$$;
grant execute on function private.finish_ai_job_item(text,uuid,text,text) to service_role;

create or replace function public.fail_ai_job_item(job_name text, user_id uuid, error text) returns void
language sql
set search_path = ''
as $$ select private.finish_ai_job_item(job_name, user_id, 'failed', error) $$;
comment on function public.fail_ai_job_item(text, uuid, text) is 'Edge jobs (service role): records that a claimed user failed today.';
grant execute on function fail_ai_job_item(text,uuid,text) to service_role;

-- Stores today's analysis of a user (one per day: a second one replaces the first).
create or replace function private.save_note_analysis(target_user uuid, analysis jsonb, entry_count integer)
returns public.note_analyses
language plpgsql security definer
set search_path = ''
as $$
declare
  row public.note_analyses;
begin
  insert into public.note_analyses as n (user_id, analysis_date, summary, mood_trends, topics, patterns,
                                         recommendations, insights, entry_count)
  values (target_user, private.utc_today(), analysis ->> 'summary', coalesce(analysis -> 'mood_trends', '{}'),
          coalesce(analysis -> 'topics', '[]'), coalesce(analysis -> 'patterns', '[]'),
          coalesce(analysis -> 'recommendations', '[]'), coalesce(analysis -> 'insights', '{}'), entry_count)
  on conflict (user_id, analysis_date) do update set
    summary = excluded.summary, mood_trends = excluded.mood_trends, topics = excluded.topics,
    patterns = excluded.patterns, recommendations = excluded.recommendations, insights = excluded.insights,
    entry_count = excluded.entry_count, created_at = now()
  returning * into row;
  perform private.finish_ai_job_item('analyze-notes', target_user, 'done', null);
  return row;
end
$$;
grant execute on function private.save_note_analysis(uuid,jsonb,integer) to service_role;

create or replace function public.save_note_analysis(user_id uuid, analysis jsonb, entry_count integer)
returns public.note_analyses
language sql
set search_path = ''
as $$ select private.save_note_analysis(user_id, analysis, entry_count) $$;
comment on function public.save_note_analysis(uuid, jsonb, integer) is 'Edge jobs (service role): stores today''s note analysis of a user.';
grant execute on function save_note_analysis(uuid,jsonb,integer) to service_role;

-- The daily assistant drop: from the system user, type encouragement, no allowance. Returns
-- false when the user already has today's (the unique key decides, also under concurrency).
create or replace function private.send_assistant_drop(target_user uuid, message text) returns boolean
language plpgsql security definer
set search_path = ''
as $$
declare
  sent_id uuid;
begin
  if coalesce(btrim(message), '') = '' then
    raise exception 'content: must not be empty' using errcode = '22023';
  end if;
  insert into public.encouragement_sent_drops (sender_id, recipient_id, drop_type, content, is_system)
  values (private.assistant_user_id(), target_user, 'encouragement', left(btrim(message), 1000), true)
  on conflict (recipient_id, sent_day) where is_system do nothing
  returning id into sent_id;
  if sent_id is not null then
    perform private.notify(target_user, 'encouragement.drop_received',
      jsonb_build_object('drop_id', sent_id, 'sender_id', private.assistant_user_id(), 'drop_type', 'encouragement'));
  end if;
  perform private.finish_ai_job_item('generate-daily-drops', target_user,
                                     case when sent_id is null then 'skipped' else 'done' end, null);
  return sent_id is not null;
end
$$;
grant execute on function private.send_assistant_drop(uuid,text) to service_role;

create or replace function public.send_assistant_drop(user_id uuid, content text) returns boolean
language sql
set search_path = ''
as $$ select private.send_assistant_drop(user_id, content) $$;
comment on function public.send_assistant_drop(uuid, text) is
  'Edge jobs (service role): today''s assistant drop for a user; false when it was already sent.';
grant execute on function send_assistant_drop(uuid,text) to service_role;

-- Work the running invocations will not reach: users queued over a minute ago and still
-- unclaimed, or claims whose lease ran out.
create or replace function private.ai_job_stalled(job_name text) returns boolean
language sql stable security definer
set search_path = ''
as $$
  select exists (
    select 1 from private.ai_job_queue q
     where q.job = job_name and q.day = private.utc_today()
       and ((q.status = 'pending' and q.queued_at < now() - interval '1 minute')
            or (q.status = 'running' and q.claimed_at < now() - interval '10 minutes')))
$$;

create or replace function private.continue_ai_job(job_name text, function_path text, secret_name text) returns boolean
language plpgsql
set search_path = ''
as $$
begin
  if not private.ai_job_stalled(job_name) then
    return false;
  end if;
  perform net.http_post(
    url := (select decrypted_secret from vault.decrypted_secrets where name = 'project_url') || '/functions/v1' || function_path,
    headers := jsonb_build_object('Content-Type', 'application/json',
      'x-cron-secret', (select decrypted_secret from vault.decrypted_secrets where name = secret_name)),
    body := jsonb_build_object('scheduled_at', now(), 'continuation', true),
    timeout_milliseconds := 150000);
  return true;
end
$$;
comment on function private.continue_ai_job(text, text, text) is
  'pg_cron, every minute: calls an AI job''s endpoint again while today''s queue has users no running invocation will reach.';
