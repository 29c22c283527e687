-- =============================================================================================
-- Encouragement drops: badges
-- =============================================================================================
-- The badge ladder, its recalculation and the leaderboard (routes/encouragement/badges.ts).
-- The area's overview: encouragement/shared.sql.

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

-- Top encouragers: engagement increases, then success rate; ties by user id. With org_id, only
-- that organization's members, and only for its members (anyone else: 42501, the same for an
-- organization that does not exist, so the answer names no organization). Two queries, so the
-- whole-platform board keeps its plan on the encouragement_badges_leaderboard index.
create or replace function private.encouragement_leaderboard(max_rows integer, org_id uuid)
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
  if encouragement_leaderboard.org_id is null then
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
    return;
  end if;
  if not private.is_trusted_caller() and not private.is_org_member(encouragement_leaderboard.org_id) then
    raise exception 'org_id: only members of an organization see its leaderboard' using errcode = '42501';
  end if;
  return query
  select row_number() over (order by b.engagement_increases desc, b.success_rate desc, b.user_id),
         b.user_id, p.full_name, p.avatar_url, b.level, d.name, d.emoji, d.color,
         b.engagement_increases, b.success_rate, b.total_sent, b.bonus_earned
    from (select x.* from public.encouragement_badges x
            join public.organization_members m on m.user_id = x.user_id
           where m.org_id = encouragement_leaderboard.org_id
           order by x.engagement_increases desc, x.success_rate desc, x.user_id
           limit max_rows) b
    join public.profiles p on p.id = b.user_id
    join public.encouragement_badge_definitions d on d.level = b.level
   order by b.engagement_increases desc, b.success_rate desc, b.user_id;
end
$$;
grant execute on function private.encouragement_leaderboard(integer, uuid) to authenticated, service_role;

create or replace function public.encouragement_leaderboard(max_rows integer default 50, org_id uuid default null)
returns table (
  rank bigint, user_id uuid, full_name text, avatar_url text, level integer, name text, emoji text, color text,
  engagement_increases integer, success_rate numeric, total_sent integer, bonus_earned integer
)
language sql stable
set search_path = ''
as $$ select * from private.encouragement_leaderboard(max_rows, org_id) $$;
comment on function public.encouragement_leaderboard(integer, uuid) is
  'Top encouragers: engagement increases, then success rate, both descending; ties by user id. 1..100 rows (default 50). With org_id: that organization''s members, for its members only (else 42501).';
grant execute on function encouragement_leaderboard(integer, uuid) to authenticated, service_role;
