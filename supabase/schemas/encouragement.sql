-- =============================================================================================
-- Encouragement drops
-- =============================================================================================
-- Encouragement drops: messages users send each other, a daily allowance that
-- engagement bonuses raise, the seven-level badge ladder with milestones and a leaderboard,
-- note analysis and the daily assistant drop. "Drops" here are messages, never the drops
-- currency: nothing in this file touches the drops ledger.
--
-- Days are UTC days (private.utc_today()). Writes that touch allowances, engagement or awards
-- are single SQL functions; concurrent calls cannot exceed an allowance or pay a bonus twice.
--
--   send                 public.send_encouragement_drop(...)       one transaction, row-locked allowance
--   engagement           public.process_encouragement_engagement()  set-based, hourly pg_cron
--   badges               private.recalculate_encouragement_badges(user_ids uuid[])
--   AI jobs (edge)       public.claim_ai_job_chunk(job, chunk_size) + save_note_analysis /
--                        send_assistant_drop / fail_ai_job_item    (service role only)

-- ---------------------------------------------------------------------------------------------
-- Helpers
-- ---------------------------------------------------------------------------------------------

create or replace function private.utc_today() returns date
language sql stable
set search_path = ''
as $$ select (now() at time zone 'UTC')::date $$;
comment on function private.utc_today() is 'The current UTC day: every daily counter of this area uses it.';
grant execute on function private.utc_today() to authenticated, service_role;

-- The fixed system user that sends the daily assistant drops (README: ASSISTANT_SYSTEM_USER_ID).
create or replace function private.assistant_user_id() returns uuid
language sql immutable
set search_path = ''
as $$ select 'a5515700-0000-4000-8000-000000000001'::uuid $$;
comment on function private.assistant_user_id() is 'ASSISTANT_SYSTEM_USER_ID: the sender of daily assistant drops.';
grant execute on function private.assistant_user_id() to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Configuration: one row, SPEC's defaults; every change recorded.
-- ---------------------------------------------------------------------------------------------

create table public.encouragement_config (
  id boolean primary key default true check (id),
  daily_allowance integer not null default 5 check (daily_allowance between 1 and 100),
  bonus_per_engagement integer not null default 2 check (bonus_per_engagement between 1 and 100),
  engagement_window_hours integer not null default 24 check (engagement_window_hours between 1 and 168),
  max_custom_per_day integer not null default 3 check (max_custom_per_day between 1 and 100),
  updated_at timestamptz not null default now(),
  updated_by uuid
);
alter table public.encouragement_config enable row level security;
comment on table public.encouragement_config is
  'The single encouragement-drop configuration row (SPEC defaults: allowance 5, bonus 2, window 24 h, custom 3). Changed only through update_encouragement_config.';
revoke all on public.encouragement_config from anon, authenticated, service_role;
grant select on public.encouragement_config to authenticated, service_role;

create policy "encouragement_config: signed-in users read" on public.encouragement_config
  for select to authenticated using (true);

create table public.encouragement_config_changes (
  id bigint generated always as identity primary key,
  changed_by uuid references public.profiles (id) on delete set null,
  changed_at timestamptz not null default now(),
  old_values jsonb not null,
  new_values jsonb not null
);
alter table public.encouragement_config_changes enable row level security;
comment on table public.encouragement_config_changes is 'Every configuration change: who, when, before and after.';
revoke all on public.encouragement_config_changes from anon, authenticated, service_role;
grant select on public.encouragement_config_changes to authenticated, service_role;

create index encouragement_config_changes_by on public.encouragement_config_changes (changed_by);

create policy "encouragement_config_changes: super admins read" on public.encouragement_config_changes
  for select to authenticated using ((select private.is_super_admin()));

-- Super admins: changes some settings of the one configuration row (bounded integers); the
-- change is recorded.
create or replace function private.update_encouragement_config(patch jsonb) returns public.encouragement_config
language plpgsql security definer
set search_path = ''
as $$
declare
  before public.encouragement_config;
  after public.encouragement_config;
  key text;
  value jsonb;
  bounds constant jsonb := '{"daily_allowance": 100, "bonus_per_engagement": 100, "engagement_window_hours": 168, "max_custom_per_day": 100}'::jsonb;
begin
  if not private.is_trusted_caller() then
    raise exception 'only super admins may change the configuration' using errcode = '42501';
  end if;
  if patch is null or jsonb_typeof(patch) <> 'object' or patch = '{}'::jsonb then
    raise exception 'body: name at least one of %', (select string_agg(k, ', ') from jsonb_object_keys(bounds) k)
      using errcode = '22023';
  end if;
  for key, value in select * from jsonb_each(patch) loop
    if not bounds ? key then
      raise exception '%: not an accepted field', key using errcode = '22023';
    end if;
    if jsonb_typeof(value) <> 'number' or value::numeric <> trunc(value::numeric)
       or value::numeric < 1 or value::numeric > (bounds ->> key)::numeric then
      raise exception '%: must be an integer between 1 and %', key, bounds ->> key using errcode = '22023';
    end if;
  end loop;
  select * into before from public.encouragement_config for update;
  update public.encouragement_config c set
    daily_allowance = coalesce((patch ->> 'daily_allowance')::integer, c.daily_allowance),
    bonus_per_engagement = coalesce((patch ->> 'bonus_per_engagement')::integer, c.bonus_per_engagement),
    engagement_window_hours = coalesce((patch ->> 'engagement_window_hours')::integer, c.engagement_window_hours),
    max_custom_per_day = coalesce((patch ->> 'max_custom_per_day')::integer, c.max_custom_per_day),
    updated_at = now(),
    updated_by = (select auth.uid())
  returning * into after;
  insert into public.encouragement_config_changes (changed_by, old_values, new_values)
  values ((select auth.uid()),
          to_jsonb(before) - array['id', 'updated_at', 'updated_by'],
          to_jsonb(after) - array['id', 'updated_at', 'updated_by']);
  return after;
end
$$;
grant execute on function private.update_encouragement_config(jsonb) to authenticated, service_role;

create or replace function public.update_encouragement_config(patch jsonb) returns public.encouragement_config
language sql
set search_path = ''
as $$ select private.update_encouragement_config(patch) $$;
comment on function public.update_encouragement_config(jsonb) is
  'Super admins: change some of daily_allowance, bonus_per_engagement, engagement_window_hours, max_custom_per_day (integers, bounded); the change is recorded.';
grant execute on function update_encouragement_config(jsonb) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Templates
-- ---------------------------------------------------------------------------------------------

create table public.encouragement_templates (
  id uuid primary key default gen_random_uuid(),
  type text not null check (type in ('encouragement', 'media', 'science_tidbit')),
  title text not null check (char_length(btrim(title)) between 1 and 200),
  content text not null check (char_length(btrim(content)) between 1 and 2000),
  media_type text check (media_type in ('image', 'video', 'audio', 'link')),
  thumbnail_url text check (char_length(thumbnail_url) <= 2048 and thumbnail_url ~* '^https?://'),
  is_approved boolean not null default false,
  usage_count integer not null default 0 check (usage_count >= 0),
  created_by uuid references public.profiles (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint encouragement_templates_media_type_required check ((type = 'media') = (media_type is not null)),
  constraint encouragement_templates_thumbnail_only_media check (type = 'media' or thumbnail_url is null)
);
alter table public.encouragement_templates enable row level security;
comment on table public.encouragement_templates is
  'Ready-made drops. Users see approved ones; super admins manage all. usage_count rises with each send.';
revoke all on public.encouragement_templates from anon, authenticated, service_role;
grant select, delete on public.encouragement_templates to authenticated;
grant select on public.encouragement_templates to service_role;
grant insert (type, title, content, media_type, thumbnail_url, is_approved), update (type, title, content, media_type, thumbnail_url, is_approved)
  on public.encouragement_templates to authenticated;

create index encouragement_templates_by_type on public.encouragement_templates (type, created_at desc) where is_approved;

create index encouragement_templates_created_by on public.encouragement_templates (created_by);

create policy "encouragement_templates: approved ones, or all for super admins" on public.encouragement_templates
  for select to authenticated using (is_approved or (select private.is_super_admin()));

create policy "encouragement_templates: super admins create" on public.encouragement_templates
  for insert to authenticated with check ((select private.is_super_admin()));

create policy "encouragement_templates: super admins update" on public.encouragement_templates
  for update to authenticated using ((select private.is_super_admin())) with check ((select private.is_super_admin()));

create policy "encouragement_templates: super admins delete" on public.encouragement_templates
  for delete to authenticated using ((select private.is_super_admin()));

-- Keeps a template's created_by, created_at and updated_at; clients cannot set them.
create or replace function private.stamp_encouragement_template() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    new.created_by := (select auth.uid());
    new.created_at := now();
  end if;
  new.updated_at := now();
  return new;
end
$$;

create trigger encouragement_templates_stamp before insert or update on public.encouragement_templates
  for each row execute function private.stamp_encouragement_template();

-- The columns' rules in words, as /api's template routes say them (conventions.sql, "Field
-- rules in words").
create or replace function private.check_encouragement_template_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_required('type', new.type);
  perform private.check_one_of('type', new.type, array['encouragement', 'media', 'science_tidbit']);
  perform private.check_required('title', new.title);
  perform private.check_length('title', btrim(new.title), 200);
  perform private.check_required('content', new.content);
  perform private.check_length('content', btrim(new.content), 2000);
  perform private.check_one_of('media_type', new.media_type, array['image', 'video', 'audio', 'link']);
  perform private.check_url('thumbnail_url', new.thumbnail_url, 2048);
  if new.type = 'media' and new.media_type is null then
    raise exception 'media_type: required for media templates' using errcode = '23514';
  end if;
  if new.type <> 'media' and (new.media_type is not null or new.thumbnail_url is not null) then
    raise exception '%: only for media templates', case when new.media_type is not null then 'media_type' else 'thumbnail_url' end
      using errcode = '23514';
  end if;
  perform private.check_required('is_approved', new.is_approved);
  return new;
end
$$;
create trigger encouragement_templates_check_fields
  before insert or update of type, title, content, media_type, thumbnail_url, is_approved on public.encouragement_templates
  for each row execute function private.check_encouragement_template_fields();

-- ---------------------------------------------------------------------------------------------
-- Daily records and sent drops
-- ---------------------------------------------------------------------------------------------

create table public.encouragement_daily_drops (
  user_id uuid not null references public.profiles (id) on delete cascade,
  day date not null,
  daily_allowance integer not null check (daily_allowance >= 0),
  drops_used integer not null default 0 check (drops_used >= 0),
  custom_used integer not null default 0 check (custom_used >= 0),
  bonus_earned integer not null default 0 check (bonus_earned >= 0),
  total_available integer generated always as (daily_allowance + bonus_earned - drops_used) stored,
  primary key (user_id, day),
  constraint encouragement_daily_drops_within_allowance check (drops_used <= daily_allowance + bonus_earned)
);
alter table public.encouragement_daily_drops enable row level security;
comment on table public.encouragement_daily_drops is
  'A user''s sending capacity per UTC day: allowance (from the configuration when the day''s row is made), used, custom used, bonus earned by engagement; total_available = allowance + bonus - used.';
revoke all on public.encouragement_daily_drops from anon, authenticated, service_role;
grant select on public.encouragement_daily_drops to authenticated, service_role;

create policy "encouragement_daily_drops: owners and super admins read" on public.encouragement_daily_drops
  for select to authenticated using (user_id = (select auth.uid()) or (select private.is_super_admin()));

create table public.encouragement_sent_drops (
  id uuid primary key default gen_random_uuid(),
  sender_id uuid references public.profiles (id) on delete set null,
  recipient_id uuid not null references public.profiles (id) on delete cascade,
  drop_type text not null check (drop_type in ('encouragement', 'media', 'science_tidbit')),
  template_id uuid,
  content text not null check (char_length(content) between 1 and 2000),
  entry_id uuid,
  is_custom boolean not null default false,
  is_system boolean not null default false,
  date_sent timestamptz not null default now(),
  sent_day date not null default private.utc_today(),
  read_at timestamptz,
  engaged_at timestamptz,
  bonus_drops_awarded integer not null default 0 check (bonus_drops_awarded >= 0)
);
alter table public.encouragement_sent_drops enable row level security;
comment on table public.encouragement_sent_drops is
  'Sent encouragement drops. Unjudged while in private.encouragement_unjudged_drops (engagement processing judges each once, writing engaged_at and bonus_drops_awarded of engaged drops only); bonus_drops_awarded > 0 marks a successful drop. is_system: the daily assistant drop (not counted against allowances).';
comment on column public.encouragement_sent_drops.sender_id is
  'Null once the sender deleted their account: the drop stays in the recipient''s history, from a deleted user.';
comment on column public.encouragement_sent_drops.template_id is
  'The template sent (no foreign key: the drop keeps its text and this id after the template is deleted, and engagement runs maintain one index less).';
comment on column public.encouragement_sent_drops.entry_id is
  'The entry the drop is about, checked visible to the sender at send time; kept (no foreign key) after the entry is deleted.';
comment on column public.encouragement_sent_drops.engaged_at is
  'When the recipient''s journal entries and goal check-ins after the drop passed their baseline (their average per window over the 7 windows before it, frozen when the drop was sent), within the engagement window; null if they did not (or their account was too new to have a baseline).';
revoke all on public.encouragement_sent_drops from anon, authenticated, service_role;
grant select on public.encouragement_sent_drops to authenticated, service_role;

create index encouragement_sent_drops_inbox on public.encouragement_sent_drops (recipient_id, date_sent desc, id desc);

create index encouragement_sent_drops_unread on public.encouragement_sent_drops (recipient_id, date_sent desc, id desc)
  where read_at is null;

-- A sender's drops (the badge recalculation reads only this index: sent_day and the bonus are in it).
create index encouragement_sent_drops_by_sender on public.encouragement_sent_drops (sender_id, sent_day)
  include (bonus_drops_awarded);

-- The drops engagement processing has still to judge: a narrow queue, filled as drops are written
-- (the baseline trigger below) and emptied as they are judged. Judging a drop deletes its row
-- here (a narrow row, two index entries); only an engaged drop's own row is rewritten
-- (engaged_at, bonus_drops_awarded): a drop not engaged keeps its defaults. A flag on the drop,
-- in the unjudged index's predicate, rewrote every judged drop with entries in all its indexes.
-- The row carries what judging reads (the drop's parties, day and kind, the frozen baseline), so
-- a chunk is judged from the queue alone: fetching each drop, its recipient and its baseline by
-- key took a third of a chunk at 10,000,000 drops.
create table private.encouragement_unjudged_drops (
  drop_id uuid primary key references public.encouragement_sent_drops (id) on delete cascade,
  date_sent timestamptz not null,
  sent_day date not null,
  sender_id uuid,
  recipient_id uuid not null,
  is_system boolean not null,
  baseline_activity integer not null,
  baseline_established boolean not null
);
comment on table private.encouragement_unjudged_drops is
  'The sent drops engagement processing has not judged yet (oldest date_sent first); a row leaves when its drop is judged. date_sent, sent_day, sender_id, recipient_id and is_system are the drop''s (kept equal by a trigger, the sender''s deletion included); baseline_* the drop''s frozen baseline (private.encouragement_drop_baselines; none: not established). Filled by private.queue_unjudged_drops.';

-- Oldest first; drops sent at the same moment in id order (chunks of any size judge in one order).
create index encouragement_unjudged_drops_by_date on private.encouragement_unjudged_drops (date_sent, drop_id);

-- At most one assistant drop per user and day.
create unique index encouragement_sent_drops_one_assistant_drop_a_day
  on public.encouragement_sent_drops (recipient_id, sent_day) where is_system;

create policy "encouragement_sent_drops: sender, recipient and super admins read" on public.encouragement_sent_drops
  for select to authenticated
  using (sender_id = (select auth.uid()) or recipient_id = (select auth.uid()) or (select private.is_super_admin()));

-- Which sender-recipient pairs were already paid a bonus on a day (anti-gaming: one per pair and day).
create table private.encouragement_bonus_pairs (
  sender_id uuid not null,
  recipient_id uuid not null,
  day date not null,
  drop_id uuid not null,
  primary key (sender_id, recipient_id, day)
);
comment on table private.encouragement_bonus_pairs is
  'One engagement bonus per sender, recipient and UTC send day. Bookkeeping only (no foreign keys: a bulk engagement run inserts here without per-row checks); pruned by each engagement run once no unjudged drop can read a pair (private.prune_encouragement_bonus_pairs).';

-- ---------------------------------------------------------------------------------------------
-- Badges
-- ---------------------------------------------------------------------------------------------

create table public.encouragement_badge_definitions (
  level integer primary key check (level between 1 and 20),
  name text not null unique,
  emoji text not null,
  color text not null check (color ~ '^#[0-9A-Fa-f]{6}$'),
  min_successful_drops integer not null unique check (min_successful_drops >= 0),
  min_success_rate numeric(5, 2) check (min_success_rate between 0 and 100),
  min_consecutive_days integer check (min_consecutive_days >= 0)
);
alter table public.encouragement_badge_definitions enable row level security;
comment on table public.encouragement_badge_definitions is
  'The badge ladder (SPEC: seven levels by successful drops; optional minimum success rate and consecutive days).';
revoke all on public.encouragement_badge_definitions from anon, authenticated, service_role;
grant select on public.encouragement_badge_definitions to authenticated, service_role;

create policy "encouragement_badge_definitions: signed-in users read" on public.encouragement_badge_definitions
  for select to authenticated using (true);

create table public.encouragement_badges (
  user_id uuid primary key references public.profiles (id) on delete cascade,
  level integer not null references public.encouragement_badge_definitions (level),
  total_sent integer not null default 0,
  engagement_increases integer not null default 0,
  success_rate numeric(5, 2) not null default 0,
  bonus_earned integer not null default 0,
  consecutive_days integer not null default 0,
  last_sent_day date,
  progress_to_next numeric(5, 2) not null default 0,
  updated_at timestamptz not null default now()
);
alter table public.encouragement_badges enable row level security;
comment on table public.encouragement_badges is
  'Each sender''s badge: level (never lowered), drops sent, engagement increases (successful drops), success rate (%), bonus earned, consecutive UTC sending days as of last_sent_day (a run is over once last_sent_day is before yesterday: readers show 0), progress to the next level (%). Written only by private.recalculate_encouragement_badges; every signed-in user may read badges.';
revoke all on public.encouragement_badges from anon, authenticated, service_role;
grant select on public.encouragement_badges to authenticated, service_role;

create index encouragement_badges_leaderboard on public.encouragement_badges
  (engagement_increases desc, success_rate desc, user_id);

create index encouragement_badges_level on public.encouragement_badges (level);

create policy "encouragement_badges: signed-in users read" on public.encouragement_badges
  for select to authenticated using (true);

create table public.encouragement_badge_milestones (
  id bigint generated always as identity primary key,
  user_id uuid not null references public.profiles (id) on delete cascade,
  level integer not null references public.encouragement_badge_definitions (level),
  achieved_at timestamptz not null default now(),
  stats jsonb not null,
  constraint encouragement_badge_milestones_once unique (user_id, level)
);
alter table public.encouragement_badge_milestones enable row level security;
comment on table public.encouragement_badge_milestones is
  'One row when a user first reaches a level, with the stats at that moment; readable by every signed-in user.';
revoke all on public.encouragement_badge_milestones from anon, authenticated, service_role;
grant select on public.encouragement_badge_milestones to authenticated, service_role;

create index encouragement_badge_milestones_level on public.encouragement_badge_milestones (level);

create policy "encouragement_badge_milestones: signed-in users read" on public.encouragement_badge_milestones
  for select to authenticated using (true);

-- Locks the badges of these users in user order (callers side by side never wait on each other
-- in opposite orders), one index probe each: joined to the ids, or with `= any`, the lock was
-- planned as a scan and hash of every badge at 1,000,000 badges (450 ms a chunk of 10,000).
create or replace function private.lock_encouragement_badges(user_ids uuid[]) returns void
language plpgsql
set search_path = ''
as $$
begin
  perform 1
     from (select distinct u.id from unnest(user_ids) u(id) order by u.id) u
    cross join lateral (select 1 from public.encouragement_badges b where b.user_id = u.id for update of b) l;
end
$$;
comment on function private.lock_encouragement_badges(uuid[]) is
  'Locks the existing badges of these users (for update), in user order, by index.';

-- Recalculates the badges of the given users from their sent drops, set-based. A level is
-- never lost; each newly reached level writes one milestone with the stats snapshot.
create or replace function private.recalculate_encouragement_badges(
  user_ids uuid[], successes_added integer[] default null, bonus_added integer[] default null
) returns integer
language plpgsql security definer
set search_path = ''
set work_mem = '64MB'
set jit = off
as $$
declare
  today constant date := private.utc_today();
  incremental constant boolean := successes_added is not null;
  changed integer;
begin
  if coalesce(cardinality(user_ids), 0) = 0 then
    return 0;
  end if;
  -- Concurrent recalculations of a user queue here (in key order), so the statement below
  -- starts from the latest committed badge and drops.
  perform private.lock_encouragement_badges(user_ids);
  with users as (
    select distinct u.id from unnest(user_ids) u(id)
      join public.profiles p on p.id = u.id
     where u.id <> private.assistant_user_id()
  ),
  -- Full: each sender's drops per UTC day, read once, from the by-sender index alone (it
  -- carries bonus_drops_awarded: an index-only scan, no visit to the wide rows).
  days as (
    select d.sender_id, d.sent_day, count(*) as total_sent, count(*) filter (where d.bonus_drops_awarded > 0) as successes,
           sum(d.bonus_drops_awarded) as bonus
      from public.encouragement_sent_drops d
      join users u on u.id = d.sender_id
     where not incremental
     group by d.sender_id, d.sent_day
  ),
  counts as (
    -- Full: from the sent drops. Incremental (engagement runs): the badge's own stats plus the
    -- successes and bonus just paid, without reading the drops again.
    select i.user_id as sender_id, b.total_sent::bigint as total_sent,
           (b.engagement_increases + i.n)::bigint as successes, (b.bonus_earned + i.bonus)::bigint as bonus,
           b.last_sent_day as last_day, b.consecutive_days as kept_streak
      from unnest(user_ids, successes_added, bonus_added) i(user_id, n, bonus)
      join public.encouragement_badges b on b.user_id = i.user_id
     where incremental
    union all
    -- (plus the totals of drops the retention job removed: retention.sql)
    select x.sender_id, sum(x.total_sent)::bigint, sum(x.successes)::bigint, sum(x.bonus)::bigint, max(x.last_day), null::integer
      from (select y.sender_id, sum(y.total_sent) as total_sent, sum(y.successes) as successes, sum(y.bonus) as bonus,
                   max(y.sent_day) as last_day
              from days y
             group by y.sender_id
            union all
            select r.sender_id, r.total_sent, r.successes, r.bonus, r.last_day
              from private.encouragement_sent_drops_purged r
              join users u on u.id = r.sender_id
             where not incremental) x
     group by x.sender_id
  ),
  -- The run of consecutive sending days ending at the last one: with the days numbered from
  -- the newest (rn = 1), a day belongs to it while day + rn - 1 is the newest day.
  ranked as (
    select y.sender_id, y.sent_day, row_number() over (partition by y.sender_id order by y.sent_day desc) as rn
      from days y where y.sent_day <= today
  ),
  streaks as (
    select r.sender_id, count(*) filter (where r.sent_day + (r.rn - 1)::integer = c.last_day) as streak
      from ranked r join counts c on c.sender_id = r.sender_id
     group by r.sender_id
  ),
  stats as (
    select u.id as user_id,
           coalesce(c.total_sent, 0)::integer as total_sent,
           coalesce(c.successes, 0)::integer as successes,
           coalesce(c.bonus, 0)::integer as bonus,
           c.last_day,
           -- A run that ended before yesterday is over.
           case when c.last_day >= today - 1 then coalesce(c.kept_streak, k.streak, 0) else 0 end::integer as streak
      from users u
      left join counts c on c.sender_id = u.id
      left join streaks k on k.sender_id = u.id
     where not incremental or c.sender_id is not null
  ),
  rated as (
    select s.*, case when s.total_sent > 0 then round(s.successes * 100.0 / s.total_sent, 2) else 0 end as rate
      from stats s
  ),
  leveled as (
    select r.*, coalesce(b.level, 0) as old_level,
           greatest(coalesce(b.level, 0), (
             select max(d.level) from public.encouragement_badge_definitions d
              where d.min_successful_drops <= r.successes
                and (d.min_success_rate is null or r.rate >= d.min_success_rate)
                and (d.min_consecutive_days is null or r.streak >= d.min_consecutive_days))) as new_level
      from rated r
      left join public.encouragement_badges b on b.user_id = r.user_id
  ),
  progressed as (
    select l.*,
           coalesce((
             select least(100, greatest(0, round(
                      (l.successes - cur.min_successful_drops) * 100.0
                      / nullif(nxt.min_successful_drops - cur.min_successful_drops, 0), 2)))
               from public.encouragement_badge_definitions cur,
                    lateral (select n.min_successful_drops from public.encouragement_badge_definitions n
                              where n.level > l.new_level order by n.level limit 1) nxt
              where cur.level = l.new_level), 100) as progress
      from leveled l
  ),
  saved as (
    insert into public.encouragement_badges as b
           (user_id, level, total_sent, engagement_increases, success_rate, bonus_earned, consecutive_days, last_sent_day,
            progress_to_next, updated_at)
    select p.user_id, p.new_level, p.total_sent, p.successes, p.rate, p.bonus, p.streak, p.last_day, p.progress, now()
      from progressed p
     order by p.user_id
    on conflict (user_id) do update set
      level = greatest(b.level, excluded.level),
      total_sent = excluded.total_sent,
      engagement_increases = excluded.engagement_increases,
      success_rate = excluded.success_rate,
      bonus_earned = excluded.bonus_earned,
      consecutive_days = excluded.consecutive_days,
      last_sent_day = excluded.last_sent_day,
      progress_to_next = excluded.progress_to_next,
      updated_at = excluded.updated_at
    returning b.user_id
  ),
  reached as (
    insert into public.encouragement_badge_milestones (user_id, level, stats)
    select p.user_id, d.level, jsonb_build_object(
             'total_sent', p.total_sent, 'engagement_increases', p.successes, 'success_rate', p.rate,
             'bonus_earned', p.bonus, 'consecutive_days', p.streak)
      from progressed p
      join public.encouragement_badge_definitions d on d.level > p.old_level and d.level <= p.new_level
     where p.user_id in (select user_id from saved)
     order by p.user_id, d.level
    on conflict (user_id, level) do nothing
    returning 1
  )
  select count(*) into changed from saved;
  return changed;
end
$$;
comment on function private.recalculate_encouragement_badges(uuid[], integer[], integer[]) is
  'Recomputes the badges of these users from their sent drops (the assistant has none), or, given successes_added and bonus_added (engagement runs), adds those to the stats of existing badges; then level (never lowered), progress and a milestone per newly reached level. Returns how many badges were written.';

-- Every badge from the drops, in chunks (support: after a rule change; trusted callers). Only
-- the users a badge can exist for are walked: every sender of a drop, every badge holder (a badge
-- whose drops are gone) and every sender with purged totals, in id order, never the profiles (at
-- 1,000,000 users most never sent). The senders come from the by-sender index one index descent
-- each (a skip scan: a sender with a million drops, the assistant's daily drops, costs no more
-- than one with one). Each call is its own transaction (about 1 s for 10,000 users), so a walk
-- never holds locks for long; a killed walk is resumed from its last cursor (a chunk done twice
-- changes nothing: the recalculation is idempotent). until_id ends a walker's id range (walkers
-- side by side over ranges). last_id is the cursor for the next call; null when the walk is over.
create or replace function private.recalculate_encouragement_badges_chunk(
  after_id uuid, chunk_size integer, until_id uuid default null
)
returns table (recalculated integer, last_id uuid)
language plpgsql security definer
set search_path = ''
set jit = off
as $$
declare
  lo constant uuid := coalesce(after_id, '00000000-0000-0000-0000-000000000000'::uuid);
  hi constant uuid := coalesce(until_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid);
  ids uuid[];
begin
  if not private.is_trusted_caller() then
    raise exception 'only super admins may recalculate every badge' using errcode = '42501';
  end if;
  if chunk_size is null or chunk_size not between 1 and 100000 then
    raise exception 'chunk_size: must be between 1 and 100000' using errcode = '22023';
  end if;
  with recursive senders (id, n) as (
    (select d.sender_id, 1 from public.encouragement_sent_drops d
      where d.sender_id > lo order by d.sender_id limit 1)
    union all
    select (select d.sender_id from public.encouragement_sent_drops d
             where d.sender_id > s.id order by d.sender_id limit 1), s.n + 1
      from senders s
     where s.n < chunk_size and s.id <= hi
  )
  select array_agg(u.id order by u.id) into ids
    from (select w.id from (
            select s.id from senders s where s.id <= hi
            union
            (select b.user_id from public.encouragement_badges b
              where b.user_id > lo and b.user_id <= hi order by b.user_id limit chunk_size)
            union
            (select r.sender_id from private.encouragement_sent_drops_purged r
              where r.sender_id > lo and r.sender_id <= hi order by r.sender_id limit chunk_size)) w
           order by w.id limit chunk_size) u;
  return query
    select coalesce(private.recalculate_encouragement_badges(ids), 0),
           case when cardinality(ids) = chunk_size then ids[chunk_size] end;
end
$$;
comment on function private.recalculate_encouragement_badges_chunk(uuid, integer, uuid) is
  'Support: recalculates from their drops the badges of the next chunk_size senders and badge holders after after_id, up to until_id (id order); last_id null when done.';
grant execute on function private.recalculate_encouragement_badges_chunk(uuid, integer, uuid) to service_role;

-- POST badge/update: the caller's own badge.
create or replace function private.update_my_encouragement_badge() returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  if (select auth.uid()) is null then
    raise exception 'sign in first' using errcode = '42501';
  end if;
  perform private.recalculate_encouragement_badges(array[(select auth.uid())]);
end
$$;
grant execute on function private.update_my_encouragement_badge() to authenticated;

create or replace function public.update_my_encouragement_badge() returns void
language sql
set search_path = ''
as $$ select private.update_my_encouragement_badge() $$;
comment on function public.update_my_encouragement_badge() is 'Recalculates the caller''s badge.';
grant execute on function update_my_encouragement_badge() to authenticated, service_role;

-- Badges of some users with their names and definitions (a user who never sent has the
-- starting badge). Unknown ids are left out.
create or replace function private.encouragement_badges_of(user_ids uuid[])
returns table (
  user_id uuid, full_name text, avatar_url text, level integer, name text, emoji text, color text,
  total_sent integer, engagement_increases integer, success_rate numeric, bonus_earned integer,
  consecutive_days integer, progress_to_next numeric, next_level integer, next_level_name text,
  next_level_min_successful_drops integer, updated_at timestamptz
)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if (select auth.uid()) is null and not private.is_trusted_caller() then
    raise exception 'sign in first' using errcode = '42501';
  end if;
  if coalesce(cardinality(user_ids), 0) > 100 then
    raise exception 'user_ids: at most 100' using errcode = '22023';
  end if;
  return query
  select p.id, p.full_name, p.avatar_url, d.level, d.name, d.emoji, d.color,
         coalesce(b.total_sent, 0), coalesce(b.engagement_increases, 0), coalesce(b.success_rate, 0),
         coalesce(b.bonus_earned, 0),
         case when b.last_sent_day >= private.utc_today() - 1 then b.consecutive_days else 0 end,
         coalesce(b.progress_to_next, 0),
         n.level, n.name, n.min_successful_drops, b.updated_at
    from (select distinct u.id from unnest(user_ids) u(id)) ids
    join public.profiles p on p.id = ids.id and p.id <> private.assistant_user_id()
    left join public.encouragement_badges b on b.user_id = p.id
    join public.encouragement_badge_definitions d on d.level = coalesce(b.level, 1)
    left join lateral (select x.level, x.name, x.min_successful_drops from public.encouragement_badge_definitions x
                        where x.level > d.level order by x.level limit 1) n on true
   order by p.id;
end
$$;
grant execute on function private.encouragement_badges_of(uuid[]) to authenticated, service_role;

create or replace function public.encouragement_badges_of(user_ids uuid[])
returns table (
  user_id uuid, full_name text, avatar_url text, level integer, name text, emoji text, color text,
  total_sent integer, engagement_increases integer, success_rate numeric, bonus_earned integer,
  consecutive_days integer, progress_to_next numeric, next_level integer, next_level_name text,
  next_level_min_successful_drops integer, updated_at timestamptz
)
language sql stable
set search_path = ''
as $$ select * from private.encouragement_badges_of(user_ids) $$;
comment on function public.encouragement_badges_of(uuid[]) is
  'Badges of up to 100 users with their display name, avatar and badge definition (signed-in users).';
grant execute on function encouragement_badges_of(uuid[]) to authenticated, service_role;

-- Top encouragers: engagement increases, then success rate; ties by user id.
create or replace function private.encouragement_leaderboard(max_rows integer)
returns table (
  rank bigint, user_id uuid, full_name text, avatar_url text, level integer, name text, emoji text, color text,
  engagement_increases integer, success_rate numeric, total_sent integer, bonus_earned integer
)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if (select auth.uid()) is null and not private.is_trusted_caller() then
    raise exception 'sign in first' using errcode = '42501';
  end if;
  if max_rows is null or max_rows not between 1 and 100 then
    raise exception 'limit: must be between 1 and 100' using errcode = '22023';
  end if;
  return query
  select row_number() over (order by b.engagement_increases desc, b.success_rate desc, b.user_id),
         b.user_id, p.full_name, p.avatar_url, b.level, d.name, d.emoji, d.color,
         b.engagement_increases, b.success_rate, b.total_sent, b.bonus_earned
    from (select * from public.encouragement_badges x
           order by x.engagement_increases desc, x.success_rate desc, x.user_id
           limit max_rows) b
    join public.profiles p on p.id = b.user_id
    join public.encouragement_badge_definitions d on d.level = b.level
   order by b.engagement_increases desc, b.success_rate desc, b.user_id;
end
$$;
grant execute on function private.encouragement_leaderboard(integer) to authenticated, service_role;

create or replace function public.encouragement_leaderboard(max_rows integer default 50)
returns table (
  rank bigint, user_id uuid, full_name text, avatar_url text, level integer, name text, emoji text, color text,
  engagement_increases integer, success_rate numeric, total_sent integer, bonus_earned integer
)
language sql stable
set search_path = ''
as $$ select * from private.encouragement_leaderboard(max_rows) $$;
comment on function public.encouragement_leaderboard(integer) is
  'Top encouragers: engagement increases, then success rate, both descending; ties by user id. 1..100 rows (default 50).';
grant execute on function encouragement_leaderboard(integer) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Sending
-- ---------------------------------------------------------------------------------------------

-- Sends a drop as the caller within today's allowance (and custom cap); counts the template,
-- notifies the recipient, recalculates the badge.
create or replace function private.send_encouragement_drop(
  recipient_id uuid, drop_type text, template_id uuid, content text, entry_id uuid
) returns public.encouragement_sent_drops
language plpgsql security definer
set search_path = ''
as $$
declare
  sender constant uuid := (select auth.uid());
  today constant date := private.utc_today();
  cfg public.encouragement_config;
  template public.encouragement_templates;
  body text := nullif(btrim(send_encouragement_drop.content), '');
  custom boolean;
  daily public.encouragement_daily_drops;
  sent public.encouragement_sent_drops;
begin
  if sender is null then
    raise exception 'sign in first' using errcode = '42501';
  end if;
  if drop_type is null or drop_type not in ('encouragement', 'media', 'science_tidbit') then
    raise exception 'drop_type: must be one of encouragement, media, science_tidbit' using errcode = '22023';
  end if;
  if (template_id is null) = (body is null) then
    raise exception 'template_id, content: give exactly one of them' using errcode = '22023';
  end if;
  if char_length(body) > 1000 then
    raise exception 'content: must be at most 1000 characters' using errcode = '22023';
  end if;
  if recipient_id is null then
    raise exception 'recipient_id: is required' using errcode = '22023';
  end if;
  if recipient_id = sender then
    raise exception 'recipient_id: you cannot send a drop to yourself' using errcode = '22023';
  end if;
  if recipient_id = private.assistant_user_id()
     or not exists (select 1 from public.profiles p where p.id = send_encouragement_drop.recipient_id and p.is_active) then
    raise exception 'recipient_id: no active user %', recipient_id using errcode = 'PT404';
  end if;
  custom := body is not null;
  if not custom then
    select * into template from public.encouragement_templates t
     where t.id = send_encouragement_drop.template_id and t.is_approved and t.type = send_encouragement_drop.drop_type;
    if not found then
      raise exception 'template_id: no approved % template %', drop_type, template_id using errcode = 'PT404';
    end if;
  end if;

  -- The allowance: today's row, locked by the conditional update, so concurrent sends queue
  -- behind each other and re-check the counts.
  select * into cfg from public.encouragement_config;
  insert into public.encouragement_daily_drops (user_id, day, daily_allowance)
  values (sender, today, cfg.daily_allowance)
  on conflict (user_id, day) do nothing;
  update public.encouragement_daily_drops d
     set drops_used = d.drops_used + 1,
         custom_used = d.custom_used + case when custom then 1 else 0 end
   where d.user_id = sender and d.day = today
     and d.drops_used < d.daily_allowance + d.bonus_earned
     and (not custom or d.custom_used < cfg.max_custom_per_day)
  returning * into daily;
  if not found then
    select * into daily from public.encouragement_daily_drops d where d.user_id = sender and d.day = today;
    if daily.drops_used >= daily.daily_allowance + daily.bonus_earned then
      raise exception 'No encouragement drops left today: all % used (allowance % + bonus %); more tomorrow (UTC)',
        daily.drops_used, daily.daily_allowance, daily.bonus_earned using errcode = 'PT429';
    end if;
    raise exception 'Custom drop limit reached: % custom drops per day; send a template instead', cfg.max_custom_per_day
      using errcode = 'PT429';
  end if;

  insert into public.encouragement_sent_drops (sender_id, recipient_id, drop_type, template_id, content, entry_id, is_custom)
  values (sender, recipient_id, drop_type, template_id,
          coalesce(body, template.content), entry_id, custom)
  returning * into sent;
  if not custom then
    update public.encouragement_templates t set usage_count = t.usage_count + 1 where t.id = template.id;
  end if;
  perform private.notify(recipient_id, 'encouragement.drop_received',
    jsonb_build_object('drop_id', sent.id, 'sender_id', sender, 'drop_type', drop_type));
  perform private.recalculate_encouragement_badges(array[sender]);
  return sent;
end
$$;
grant execute on function private.send_encouragement_drop(uuid,text,uuid,text,uuid) to authenticated;

-- The entry check runs here, as the caller: an entry_id must be one the journal's policies
-- show them.
create or replace function public.send_encouragement_drop(
  recipient_id uuid, drop_type text, template_id uuid default null, content text default null, entry_id uuid default null
) returns public.encouragement_sent_drops
language plpgsql
set search_path = ''
as $$
begin
  if entry_id is not null and not exists (select 1 from public.journal_entries e where e.id = send_encouragement_drop.entry_id) then
    raise exception 'entry_id: no entry % that you can see', entry_id using errcode = 'PT404';
  end if;
  return private.send_encouragement_drop(recipient_id, drop_type, template_id, content, entry_id);
end
$$;
comment on function public.send_encouragement_drop(uuid, text, uuid, text, uuid) is
  'Sends a drop as the caller: one of today''s allowance (custom content also counts against the custom cap), template usage counted, recipient notified, badge recalculated. 429 (PT429) when no allowance or custom drop is left; nothing is written then.';
grant execute on function send_encouragement_drop(uuid,text,uuid,text,uuid) to authenticated, service_role;

-- Today's record of the caller (without a row yet: the configured allowance, nothing used).
create or replace function public.my_encouragement_drops() returns jsonb
language sql stable
set search_path = ''
as $$
  select jsonb_build_object(
           'day', private.utc_today(),
           'daily_allowance', coalesce(d.daily_allowance, c.daily_allowance),
           'drops_used', coalesce(d.drops_used, 0),
           'bonus_drops_earned', coalesce(d.bonus_earned, 0),
           'total_available', coalesce(d.total_available, c.daily_allowance),
           'custom_used', coalesce(d.custom_used, 0),
           'custom_remaining', greatest(0, c.max_custom_per_day - coalesce(d.custom_used, 0)))
    from public.encouragement_config c
    left join public.encouragement_daily_drops d on d.user_id = (select auth.uid()) and d.day = private.utc_today()
$$;
comment on function public.my_encouragement_drops() is 'The caller''s drops today (UTC day).';
grant execute on function my_encouragement_drops() to authenticated, service_role;

-- Received drops, newest first, with the sender's name and avatar.
create or replace function private.received_encouragement_drops(
  unread_only boolean, before_date_sent timestamptz, before_id uuid, page_size integer
) returns table (
  id uuid, sender_id uuid, sender_name text, sender_avatar_url text, is_system boolean, drop_type text,
  content text, template_id uuid, entry_id uuid, date_sent timestamptz, read_at timestamptz
)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if (select auth.uid()) is null then
    raise exception 'sign in first' using errcode = '42501';
  end if;
  return query
  select d.id, d.sender_id, coalesce(p.full_name, private.deleted_user_name()), p.avatar_url, d.is_system,
         d.drop_type, d.content, d.template_id, d.entry_id, d.date_sent, d.read_at
    from public.encouragement_sent_drops d
    left join public.profiles p on p.id = d.sender_id
   where d.recipient_id = (select auth.uid())
     and (not coalesce(unread_only, false) or d.read_at is null)
     and (before_date_sent is null or (d.date_sent, d.id) < (before_date_sent, before_id))
   order by d.date_sent desc, d.id desc
   limit least(greatest(coalesce(page_size, 50), 1), 101);
end
$$;
grant execute on function private.received_encouragement_drops(boolean,timestamp with time zone,uuid,integer) to authenticated;

create or replace function public.received_encouragement_drops(
  unread_only boolean default false, before_date_sent timestamptz default null, before_id uuid default null,
  page_size integer default 50
) returns table (
  id uuid, sender_id uuid, sender_name text, sender_avatar_url text, is_system boolean, drop_type text,
  content text, template_id uuid, entry_id uuid, date_sent timestamptz, read_at timestamptz
)
language sql stable
set search_path = ''
as $$ select * from private.received_encouragement_drops(unread_only, before_date_sent, before_id, page_size) $$;
comment on function public.received_encouragement_drops(boolean, timestamptz, uuid, integer) is
  'The caller''s received drops, newest first (keyset by date_sent, id), optionally unread only, with the sender''s name and avatar.';
grant execute on function received_encouragement_drops(boolean,timestamp with time zone,uuid,integer) to authenticated, service_role;

-- Marks one of the caller's received drops read (the first time is kept).
create or replace function private.mark_encouragement_drop_read(drop_id uuid) returns public.encouragement_sent_drops
language plpgsql security definer
set search_path = ''
as $$
declare
  row public.encouragement_sent_drops;
begin
  update public.encouragement_sent_drops d set read_at = coalesce(d.read_at, now())
   where d.id = drop_id and d.recipient_id = (select auth.uid())
  returning * into row;
  if not found then
    raise exception 'no received drop %', drop_id using errcode = 'PT404';
  end if;
  return row;
end
$$;
grant execute on function private.mark_encouragement_drop_read(uuid) to authenticated;

create or replace function public.mark_encouragement_drop_read(drop_id uuid) returns public.encouragement_sent_drops
language sql
set search_path = ''
as $$ select private.mark_encouragement_drop_read(drop_id) $$;
comment on function public.mark_encouragement_drop_read(uuid) is 'Marks one of the caller''s received drops read (the first time is kept).';
grant execute on function mark_encouragement_drop_read(uuid) to authenticated, service_role;

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

