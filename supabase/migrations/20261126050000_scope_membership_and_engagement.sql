-- Issue 20, findings 10 and 12, and the bonus-pair pruning left from issue 10.
--
-- 1. Leaving a team or an organization takes one's entries and notebooks out of it. An entry
--    or notebook that names a team (organization) now references its owner's membership of
--    it, (team_id, user_id) -> team_members with `on delete set null (team_id)`, and the same
--    for org_id -> organization_members. Removing the membership (by an admin or owner, by
--    leaving, or by leaving the organization, which removes its team memberships) clears the
--    id, and the existing fallback for a deleted team or organization does the rest in the
--    same statement: the levels that named it turn back to `user`, an entry whose levels
--    fell back leaves its notebook, and a notebook's inheriting entries are re-derived
--    (private.prepare_journal_entry / prepare_notebook, pg_trigger_depth() > 1). Nothing
--    of the ex-member's stays in the old audience, so no later write of theirs (PostgREST
--    PATCH on journal_entries or journal_entry_contents, update_journal_entry, /api) can
--    change what that audience reads; sharing into it again is refused as for any outsider
--    (check_sharing_target), and the foreign key refuses it even to a write that raced the
--    removal (it locks the membership row it references). Being added again restores
--    nothing: the levels were reset, and sharing again is the member's own choice.
-- 2. Engagement (SPEC: "the recipient becomes more engaged") is measured against the
--    recipient's own baseline; see private.process_encouragement_engagement below.
-- 3. private.encouragement_bonus_pairs is pruned in bounded chunks by the hourly engagement run.

-- =======================================================================================
-- 1. Entries and notebooks leave a team or organization with their owner.
-- =======================================================================================

-- Rows shared into a team or organization their owner already left (possible until now)
-- fall back exactly as the cascade below does from now on. Run once here; a function so that
-- supabase/tests/journal_visibility.test.sql can check it on such rows. As a direct session
-- (no auth.uid()) the triggers derive the scopes and re-derive a notebook's entries without
-- re-checking the writer.
create or replace function private.unshare_where_owner_left() returns integer
language plpgsql
set search_path = ''
as $$
declare
  entries integer;
  books integer;
begin
  with stale as (
    select e.id,
           e.team_id is not null and not exists (
             select 1 from public.team_members m where m.team_id = e.team_id and m.user_id = e.user_id) as team_gone,
           e.org_id is not null and not exists (
             select 1 from public.organization_members m where m.org_id = e.org_id and m.user_id = e.user_id) as org_gone
      from public.journal_entries e
     where e.team_id is not null or e.org_id is not null
  ), fallback as (
    select e.id, s.team_gone, s.org_gone,
           case when (e.metadata_visibility = 'team' and s.team_gone) or (e.metadata_visibility = 'org' and s.org_gone)
                then 'user' else e.metadata_visibility end as meta,
           case when (e.content_visibility = 'team' and s.team_gone) or (e.content_visibility = 'org' and s.org_gone)
                then 'user' else e.content_visibility end as content
      from public.journal_entries e join stale s on s.id = e.id
     where s.team_gone or s.org_gone
  )
  update public.journal_entries e
     set team_id = case when f.team_gone then null else e.team_id end,
         org_id = case when f.org_gone then null else e.org_id end,
         metadata_visibility = f.meta,
         content_visibility = f.content,
         -- Back to owner-only, not to the notebook's levels (see prepare_journal_entry).
         notebook_id = case when (f.meta, f.content) is distinct from (e.metadata_visibility, e.content_visibility)
                            then null else e.notebook_id end
    from fallback f
   where f.id = e.id;
  get diagnostics entries = row_count;

  with stale as (
    select n.id,
           n.team_id is not null and not exists (
             select 1 from public.team_members m where m.team_id = n.team_id and m.user_id = n.user_id) as team_gone,
           n.org_id is not null and not exists (
             select 1 from public.organization_members m where m.org_id = n.org_id and m.user_id = n.user_id) as org_gone
      from public.notebooks n
     where n.team_id is not null or n.org_id is not null
  )
  update public.notebooks n
     set team_id = case when s.team_gone then null else n.team_id end,
         org_id = case when s.org_gone then null else n.org_id end,
         metadata_visibility = case when (n.metadata_visibility = 'team' and s.team_gone) or (n.metadata_visibility = 'org' and s.org_gone)
                                    then 'user' else n.metadata_visibility end,
         content_visibility = case when (n.content_visibility = 'team' and s.team_gone) or (n.content_visibility = 'org' and s.org_gone)
                                   then 'user' else n.content_visibility end
    from stale s
   where s.id = n.id and (s.team_gone or s.org_gone);
  get diagnostics books = row_count;
  return entries + books;
end
$$;
comment on function private.unshare_where_owner_left() is
  'Once, before the membership foreign keys: entries and notebooks naming a team/organization their owner left fall back to user, as the cascade does since. Returns the rows changed.';
revoke execute on function private.unshare_where_owner_left() from public, anon, authenticated;
select private.unshare_where_owner_left();

-- The membership keys. The indexes replace the single-column ones (same leading column, so
-- the team/organization foreign keys keep theirs) and serve the set-null on a removal.
alter table public.journal_entries
  add constraint journal_entries_team_membership foreign key (team_id, user_id)
    references public.team_members (team_id, user_id) on delete set null (team_id),
  add constraint journal_entries_org_membership foreign key (org_id, user_id)
    references public.organization_members (org_id, user_id) on delete set null (org_id);
comment on constraint journal_entries_team_membership on public.journal_entries is
  'An entry names only a team its owner belongs to; leaving the team clears team_id, and the levels that named it fall back to user (private.prepare_journal_entry).';
comment on constraint journal_entries_org_membership on public.journal_entries is
  'An entry names only an organization its owner belongs to; leaving it clears org_id, and the levels that named it fall back to user.';
create index journal_entries_team_membership on public.journal_entries (team_id, user_id);
create index journal_entries_org_membership on public.journal_entries (org_id, user_id);
drop index public.journal_entries_team;
drop index public.journal_entries_org;

alter table public.notebooks
  add constraint notebooks_team_membership foreign key (team_id, user_id)
    references public.team_members (team_id, user_id) on delete set null (team_id),
  add constraint notebooks_org_membership foreign key (org_id, user_id)
    references public.organization_members (org_id, user_id) on delete set null (org_id);
comment on constraint notebooks_team_membership on public.notebooks is
  'A notebook names only a team its owner belongs to; leaving the team clears team_id, its levels fall back to user and its inheriting entries follow at once.';
comment on constraint notebooks_org_membership on public.notebooks is
  'A notebook names only an organization its owner belongs to; leaving it clears org_id, its levels fall back to user and its inheriting entries follow at once.';
create index notebooks_team_membership on public.notebooks (team_id, user_id);
create index notebooks_org_membership on public.notebooks (org_id, user_id);
drop index public.notebooks_team;
drop index public.notebooks_org;

comment on function private.orphan_safe_level(text, uuid, uuid) is
  'A level naming a team/organization whose id was cleared by a cascade (the team or organization was deleted, or the owner left it) falls back to user.';

-- =======================================================================================
-- 2. Engagement against the recipient's baseline.
-- =======================================================================================
-- Supersedes private.process_encouragement_engagement of 20261122040000_encouragement.sql.
-- Only the judgement (`observed`) and the pruning at the end are new; paying, the
-- one-bonus-per-pair-and-day rule and the badges are as before.
--
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
create or replace function private.process_encouragement_engagement(max_drops integer) returns jsonb
language plpgsql security definer
set search_path = ''
set work_mem = '64MB'
set jit = off
as $$
declare
  started constant timestamptz := clock_timestamp();
  today constant date := private.utc_today();
  cfg public.encouragement_config;
  window_length interval;
  baseline_length interval;
  judged integer;
  engaged integer;
  paid integer;
  paid_senders uuid[];
  paid_counts integer[];
  paid_bonus integer[];
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
  baseline_length := 7 * window_length;

  with candidates as (
    select d.id, d.sender_id, d.recipient_id, d.sent_day, d.date_sent, d.is_system
      from public.encouragement_sent_drops d
     where not d.engagement_checked
     order by d.date_sent
     limit max_drops
       for update skip locked
  ),
  observed as materialized (
    select c.*, r.is_ai as recipient_is_ai, (
             -- One range scan per table over the baseline period and the window; skipped
             -- (one-time filter) for an account younger than the baseline period.
             select case
                      when a.after_times is null then null
                      when a.before_n > 0
                        or exists (select 1 from public.journal_entries e
                                    where e.user_id = c.recipient_id and e.created_at < c.date_sent - baseline_length)
                        or exists (select 1 from public.goal_check_ins g
                                    where g.user_id = c.recipient_id and g.created_at < c.date_sent - baseline_length)
                      then a.after_times[a.before_n / 7 + 1]
                    end
               from (select count(*) filter (where t.at <= c.date_sent)::integer as before_n,
                            array_agg(t.at order by t.at) filter (where t.at > c.date_sent) as after_times
                       from (select e.created_at as at from public.journal_entries e
                              where e.user_id = c.recipient_id
                                and e.created_at >= c.date_sent - baseline_length and e.created_at <= c.date_sent + window_length
                             union all
                             select g.created_at from public.goal_check_ins g
                              where g.user_id = c.recipient_id
                                and g.created_at >= c.date_sent - baseline_length and g.created_at <= c.date_sent + window_length) t
                    ) a
              where r.created_at <= c.date_sent - baseline_length
           ) as engaged_at
      from candidates c
      join public.profiles r on r.id = c.recipient_id
  ),
  judged_drops as (
    select o.* from observed o where o.engaged_at is not null or o.date_sent + window_length <= now()
  ),
  eligible as (
    select j.* from judged_drops j
     where j.engaged_at is not null and not j.is_system and j.sender_id <> j.recipient_id and not j.recipient_is_ai
  ),
  winners as (
    insert into private.encouragement_bonus_pairs (sender_id, recipient_id, day, drop_id)
    select distinct on (e.sender_id, e.recipient_id, e.sent_day) e.sender_id, e.recipient_id, e.sent_day, e.id
      from eligible e
     order by e.sender_id, e.recipient_id, e.sent_day, e.date_sent, e.id
    on conflict do nothing
    returning drop_id, sender_id
  ),
  marked as (
    update public.encouragement_sent_drops s
       set engagement_checked = true,
           engaged_at = j.engaged_at,
           bonus_drops_awarded = case when w.drop_id is null then 0 else cfg.bonus_per_engagement end
      from judged_drops j
      left join winners w on w.drop_id = j.id
     where s.id = j.id
    returning s.sender_id, s.engaged_at, s.bonus_drops_awarded
  ),
  per_sender as (
    select m.sender_id, count(*)::integer as n, sum(m.bonus_drops_awarded)::integer as bonus
      from marked m where m.bonus_drops_awarded > 0
     group by m.sender_id
  ),
  credited as (
    insert into public.encouragement_daily_drops as d (user_id, day, daily_allowance, bonus_earned)
    select p.sender_id, today, cfg.daily_allowance, p.bonus from per_sender p order by p.sender_id
    on conflict (user_id, day) do update set bonus_earned = d.bonus_earned + excluded.bonus_earned
    returning d.user_id
  )
  select (select count(*) from marked), (select count(*) from marked where engaged_at is not null),
         (select count(*) from marked where bonus_drops_awarded > 0),
         (select array_agg(p.sender_id order by p.sender_id) from per_sender p),
         (select array_agg(p.n order by p.sender_id) from per_sender p),
         (select array_agg(p.bonus order by p.sender_id) from per_sender p)
    into judged, engaged, paid, paid_senders, paid_counts, paid_bonus;

  -- Badges: the paid senders' successes and bonus are added to their badges (those without a
  -- badge yet, and everyone who sent in the last two hours, are recalculated in full; sends
  -- recalculate already, this catches one that raced this run). A streak that ended needs no
  -- run: readers show 0 once last_sent_day is before yesterday.
  recent := private.recalculate_encouragement_badges(paid_senders, paid_counts, paid_bonus);
  recent := recent + private.recalculate_encouragement_badges(array(
    select u from unnest(coalesce(paid_senders, '{}')) u
     where not exists (select 1 from public.encouragement_badges b where b.user_id = u)
    union
    select d.sender_id from public.encouragement_sent_drops d
     where not d.engagement_checked and d.date_sent > now() - interval '2 hours' and not d.is_system));

  pruned := private.prune_encouragement_bonus_pairs(50000);

  select count(*) into remaining from public.encouragement_sent_drops d
   where not d.engagement_checked and d.date_sent + window_length <= now();
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
  'Judges due drops against each recipient''s baseline (established account, more activity in the window than their average per window over the 7 windows before), pays bonuses once per pair and day, recalculates badges, prunes old bonus pairs.';

comment on column public.encouragement_sent_drops.engaged_at is
  'When the recipient''s journal entries and goal check-ins after the drop passed their baseline (their average per window over the 7 windows before it), within the engagement window; null if they did not (or their account was too new to have a baseline).';

-- =======================================================================================
-- 3. Pruning the bonus pairs.
-- =======================================================================================
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
  select (min(d.date_sent) at time zone 'UTC')::date - 1 into oldest_open
    from public.encouragement_sent_drops d where not d.engagement_checked;
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
revoke execute on function private.prune_encouragement_bonus_pairs(integer) from public, anon, authenticated;

comment on table private.encouragement_bonus_pairs is
  'One engagement bonus per sender, recipient and UTC send day. Bookkeeping only (no foreign keys: a bulk engagement run inserts here without per-row checks); pruned by each engagement run once no unjudged drop can read a pair (private.prune_encouragement_bonus_pairs).';

notify pgrst, 'reload schema';
