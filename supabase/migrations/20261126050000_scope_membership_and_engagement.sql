-- Issue 20, findings 10 and 12, and the bonus-pair pruning left from issue 10.
--
-- 1. Leaving a team or an organization takes one's entries and notebooks out of it, in the
--    same transaction as the removal (by an admin or owner, by leaving, by leaving the
--    organization, which removes its team memberships, or by deleting the group): the ids
--    that named it are cleared and the existing fallback for a deleted team or organization
--    does the rest: the levels that named it turn back to `user`, an entry whose levels fell
--    back leaves its notebook, and a notebook's inheriting entries are re-derived
--    (private.prepare_journal_entry / prepare_notebook, pg_trigger_depth() > 1). Nothing of
--    the ex-member's stays in the old audience, so no later write of theirs (PostgREST PATCH
--    on journal_entries or journal_entry_contents, update_journal_entry, /api) can change
--    what that audience reads; sharing into it again is refused as for any outsider
--    (check_sharing_target). Being added again restores nothing: the levels were reset, and
--    sharing again is the member's own choice. A per-user advisory lock, the journal gate,
--    keeps a member's journal writes and their removal apart (one waits for the other), so
--    a write racing the removal cannot keep the old scope and the two cannot deadlock.
-- 2. Engagement (SPEC: "the recipient becomes more engaged") is measured against the
--    recipient's own baseline; see private.process_encouragement_engagement below.
-- 3. private.encouragement_bonus_pairs is pruned in bounded chunks by the hourly engagement run.

-- =======================================================================================
-- 1. Entries and notebooks leave a team or organization with their owner.
-- =======================================================================================

-- Rows shared into a team or organization their owner already left (possible until now)
-- fall back exactly as a removal does from now on (private.unshare_on_leaving_team/_org). Run once here; a function so that
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
  'Once, before removals took entries along: entries and notebooks naming a team/organization their owner left fall back to user, as a removal does since (private.unshare_on_leaving_team/_org). Returns the rows changed.';
revoke execute on function private.unshare_where_owner_left() from public, anon, authenticated;
select private.unshare_where_owner_left();

-- No foreign keys from the journal to groups or memberships. A foreign key check takes a
-- share lock on the row it references, and Postgres lets new share lockers of a row overtake
-- a delete waiting for it: a member who keeps writing entries that name the team could keep
-- an admin's removal (or the team's deletion) waiting for ever, and one that waits for the
-- gate below while the writer's check waits for the membership row is a deadlock. The rule
-- the keys stated is kept by the triggers below instead (checked on every write, applied on
-- every removal), serialized by the gate, whose waiting is fair. team_id -> teams and
-- org_id -> organizations are dropped for the same reason (a team's own row is what its
-- deletion locks first); a row naming a team names a membership of it, so they said nothing
-- more. The (team_id, user_id) indexes serve the removal's updates.
alter table public.journal_entries
  drop constraint journal_entries_team_id_fkey,
  drop constraint journal_entries_org_id_fkey;
alter table public.notebooks
  drop constraint notebooks_team_id_fkey,
  drop constraint notebooks_org_id_fkey;
create index journal_entries_team_membership on public.journal_entries (team_id, user_id);
create index journal_entries_org_membership on public.journal_entries (org_id, user_id);
drop index public.journal_entries_team;
drop index public.journal_entries_org;
create index notebooks_team_membership on public.notebooks (team_id, user_id);
create index notebooks_org_membership on public.notebooks (org_id, user_id);
drop index public.notebooks_team;
drop index public.notebooks_org;
comment on column public.journal_entries.team_id is
  'The team the levels name; only one its owner belongs to (private.check_owner_membership on write, private.unshare_on_leaving_team and _org on removal).';
comment on column public.journal_entries.org_id is
  'The organization the levels name; only one its owner belongs to (as team_id).';
comment on column public.notebooks.team_id is
  'The team the levels name; only one its owner belongs to (as journal_entries.team_id).';
comment on column public.notebooks.org_id is
  'The organization the levels name; only one its owner belongs to (as journal_entries.team_id).';

-- The journal gate: one advisory lock per user. Every write statement a signed-in user makes
-- on journal_entries, journal_entry_contents or notebooks takes their gate shared before it
-- touches a row (a statement trigger), and holds it to the end of the transaction; removing
-- that user from a team or organization (removal, leaving, deleting the group) takes it
-- exclusively before it touches their rows. So the removal waits for the member's writes
-- under way, and the member's next writes wait for the removal: never both at once, which is
-- what let a write racing the removal keep the old scope (an entry inheriting its notebook's
-- team, a new text), and what made text edits and removals deadlock (each locked entries and
-- texts in the opposite order). Advisory locks queue in arrival order, so a member who keeps
-- writing cannot starve the removal. Writers other than the owner (trusted sessions) take
-- the owner's gate per row instead (prepare_* below).
create or replace function private.hold_journal_gate(owner uuid, exclusive boolean) returns void
language plpgsql
set search_path = ''
as $$
begin
  if exclusive then
    perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('journal gate'), pg_catalog.hashtext(owner::text));
  else
    perform pg_catalog.pg_advisory_xact_lock_shared(pg_catalog.hashtext('journal gate'), pg_catalog.hashtext(owner::text));
  end if;
end
$$;
comment on function private.hold_journal_gate(uuid, boolean) is
  'Takes a user''s journal gate for the rest of the transaction: shared by their journal writes, exclusive by a removal from a team or organization.';
revoke execute on function private.hold_journal_gate(uuid, boolean) from public, anon, authenticated;

create or replace function private.gate_journal_statement() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  uid uuid := (select auth.uid());
begin
  -- The caller's own statements; those our triggers run inside them (depth > 1) come after it.
  if uid is not null and pg_trigger_depth() = 1 then
    perform private.hold_journal_gate(uid, false);
  end if;
  return null;
end
$$;
comment on function private.gate_journal_statement() is
  'Before any row of a signed-in user''s write statement on the journal tables: takes their journal gate shared.';
revoke execute on function private.gate_journal_statement() from public, anon, authenticated;

create trigger journal_entries_gate before insert or update or delete on public.journal_entries
  for each statement execute function private.gate_journal_statement();
create trigger journal_entry_contents_gate before insert or update or delete on public.journal_entry_contents
  for each statement execute function private.gate_journal_statement();
create trigger notebooks_gate before insert or update or delete on public.notebooks
  for each statement execute function private.gate_journal_statement();

-- What the foreign keys said: a row names only a team or organization its owner belongs to.
-- Checked for any writer (check_sharing_target checks the signed-in writer, with a friendlier
-- message); under the owner's gate, so no removal runs between the check and the commit.
create or replace function private.check_owner_membership(owner uuid, team uuid, org uuid) returns void
language plpgsql
set search_path = ''
as $$
begin
  if team is not null and not exists (select 1 from public.team_members m where m.team_id = team and m.user_id = owner) then
    raise exception 'team_id: the owner is not a member of this team' using errcode = '23503';
  end if;
  if org is not null and not exists (select 1 from public.organization_members m where m.org_id = org and m.user_id = owner) then
    raise exception 'org_id: the owner is not a member of this organization' using errcode = '23503';
  end if;
end
$$;
comment on function private.check_owner_membership(uuid, uuid, uuid) is
  'Refuses (23503) a team_id/org_id naming a group the row''s owner is not in, whoever writes.';
revoke execute on function private.check_owner_membership(uuid, uuid, uuid) from public, anon, authenticated;

-- Supersedes private.prepare_notebook of 20261121001100_journal.sql: the owner's gate for a
-- writer other than the owner, and the owner-membership check. The rest is unchanged.
create or replace function private.prepare_notebook() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  if tg_op = 'UPDATE' and new.user_id is distinct from old.user_id then
    raise exception 'a notebook cannot change owner' using errcode = '42501';
  end if;
  if pg_trigger_depth() > 1 then
    new.metadata_visibility := private.orphan_safe_level(new.metadata_visibility, new.team_id, new.org_id);
    new.content_visibility := private.orphan_safe_level(new.content_visibility, new.team_id, new.org_id);
  else
    if new.user_id is distinct from (select auth.uid()) then
      perform private.hold_journal_gate(new.user_id, false);
    end if;
    if tg_op = 'INSERT' or (new.team_id, new.org_id, new.metadata_visibility, new.content_visibility)
       is distinct from (old.team_id, old.org_id, old.metadata_visibility, old.content_visibility) then
      perform private.check_sharing_target(new.team_id, new.org_id, null);
    end if;
  end if;
  -- Each id when it is set, as a foreign key would (the removal cascade clears one at a time).
  if tg_op = 'INSERT' or (new.team_id, new.org_id) is distinct from (old.team_id, old.org_id) then
    perform private.check_owner_membership(new.user_id,
      case when new.team_id is distinct from old.team_id then new.team_id end,
      case when new.org_id is distinct from old.org_id then new.org_id end);
  end if;
  if tg_op = 'UPDATE' then
    new.updated_at := now();
  end if;
  return new;
end
$$;

-- Supersedes private.prepare_journal_entry of 20261121001100_journal.sql: the owner's gate
-- for a writer other than the owner, the owner-membership check, and the notebook read
-- `for share` when the entry enters it (insert or move): a change of the notebook's levels
-- re-derives only the entries it can see, never an uncommitted one, so the two wait for each
-- other instead. The derivation is unchanged.
create or replace function private.prepare_journal_entry() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  nb public.notebooks;
begin
  if tg_op = 'UPDATE' and (new.user_id is distinct from old.user_id or new.created_at is distinct from old.created_at) then
    raise exception 'an entry''s owner and creation time cannot change' using errcode = '42501';
  end if;
  if pg_trigger_depth() > 1 then
    if (new.metadata_visibility, new.content_visibility) is distinct from (
        private.orphan_safe_level(new.metadata_visibility, new.team_id, new.org_id),
        private.orphan_safe_level(new.content_visibility, new.team_id, new.org_id)) then
      new.metadata_visibility := private.orphan_safe_level(new.metadata_visibility, new.team_id, new.org_id);
      new.content_visibility := private.orphan_safe_level(new.content_visibility, new.team_id, new.org_id);
      -- Back to owner-only, not to the notebook's levels: those could be wider than what the
      -- owner chose (a team-only entry in a public notebook must not become public).
      new.notebook_id := null;
    end if;
  else
    if new.user_id is distinct from (select auth.uid()) then
      perform private.hold_journal_gate(new.user_id, false);
    end if;
    if tg_op = 'INSERT'
       or (new.team_id, new.org_id, new.notebook_id, new.metadata_visibility, new.content_visibility)
          is distinct from (old.team_id, old.org_id, old.notebook_id, old.metadata_visibility, old.content_visibility) then
      perform private.check_sharing_target(new.team_id, new.org_id, new.notebook_id);
    end if;
  end if;
  -- Each id when it is set, as a foreign key would (the removal cascade clears one at a time).
  if tg_op = 'INSERT' or (new.team_id, new.org_id) is distinct from (old.team_id, old.org_id) then
    perform private.check_owner_membership(new.user_id,
      case when new.team_id is distinct from old.team_id then new.team_id end,
      case when new.org_id is distinct from old.org_id then new.org_id end);
  end if;

  -- Rule 5: an entry's own level wins unless it is user; then the notebook's (or user).
  if new.notebook_id is not null and (tg_op = 'INSERT' or new.notebook_id is distinct from old.notebook_id) then
    select * into nb from public.notebooks where id = new.notebook_id for share;
  else
    select * into nb from public.notebooks where id = new.notebook_id;
  end if;
  new.meta_scope := case when new.metadata_visibility <> 'user' then new.metadata_visibility
                         else coalesce(nb.metadata_visibility, 'user') end;
  new.meta_scope_id := case when new.metadata_visibility <> 'user'
                            then private.scope_of(new.metadata_visibility, new.team_id, new.org_id)
                            else private.scope_of(nb.metadata_visibility, nb.team_id, nb.org_id) end;
  new.content_scope := case when new.content_visibility <> 'user' then new.content_visibility
                            else coalesce(nb.content_visibility, 'user') end;
  new.content_scope_id := case when new.content_visibility <> 'user'
                               then private.scope_of(new.content_visibility, new.team_id, new.org_id)
                               else private.scope_of(nb.content_visibility, nb.team_id, nb.org_id) end;

  if tg_op = 'UPDATE' and (new.title, new.mood, new.tags, new.metadata_visibility, new.content_visibility,
      new.team_id, new.org_id, new.notebook_id, new.music_track_id)
      is distinct from (old.title, old.mood, old.tags, old.metadata_visibility, old.content_visibility,
      old.team_id, old.org_id, old.notebook_id, old.music_track_id) then
    new.updated_at := now();
  end if;
  return new;
end
$$;

-- Supersedes private.prepare_entry_content of 20261121001100_journal.sql: the owner's gate
-- for a writer other than the owner, and a new text locks its entry (as an update of it
-- would): a change of the entry's scope copies the scope to the texts it can see, never an
-- uncommitted one, so the two wait for each other instead. (An edited text is already
-- reached: the scope change updates that very row and waits for it.)
create or replace function private.prepare_entry_content() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  e public.journal_entries;
begin
  select * into e from public.journal_entries where id = new.entry_id;
  if e.id is null then
    raise exception 'entry_id: no such entry' using errcode = '23503';
  end if;
  if tg_op = 'UPDATE' and new.entry_id is distinct from old.entry_id then
    raise exception 'content cannot move to another entry' using errcode = '42501';
  end if;
  if pg_trigger_depth() = 1 and e.user_id is distinct from (select auth.uid()) then
    perform private.hold_journal_gate(e.user_id, false);
  end if;
  if tg_op = 'INSERT' then
    select * into e from public.journal_entries where id = new.entry_id for no key update;
    if e.id is null then
      raise exception 'entry_id: no such entry' using errcode = '23503';
    end if;
  end if;
  new.user_id := e.user_id;
  new.content_scope := e.content_scope;
  new.content_scope_id := e.content_scope_id;
  new.meta_scope := e.meta_scope;
  new.meta_scope_id := e.meta_scope_id;
  return new;
end
$$;

-- Supersedes private.backfill_mentions of 20261122000000_advisor_clean.sql: it locks texts
-- (for update) before any write statement, so it takes the caller's gate first itself.
create or replace function private.backfill_mentions(batch_size integer default 200) returns integer
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  r record;
  remaining integer;
begin
  if me is null then
    raise exception 'sign in to backfill your mentions' using errcode = '42501';
  end if;
  perform private.hold_journal_gate(me, false);
  for r in
    select entry_id, content from public.journal_entry_contents
     where user_id = me and mentions_indexed_at is null
     limit least(greatest(coalesce(batch_size, 200), 1), 1000)
     for update skip locked
  loop
    perform private.index_mentions(r.entry_id, r.content);
  end loop;
  select count(*) into remaining from public.journal_entry_contents where user_id = me and mentions_indexed_at is null;
  return remaining;
end
$$;

-- Removal: once the member's gate is held, their entries and notebooks that named the group
-- lose its id, and the fallback of a deleted group does the rest in the same statement
-- (prepare_journal_entry / prepare_notebook at pg_trigger_depth() > 1: the levels that named
-- it turn back to user, an entry whose levels fell back leaves its notebook, a notebook's
-- inheriting entries are re-derived, texts follow their entry). Runs for a removal by an
-- admin or owner, for leaving, and in the cascades of leaving an organization (the team
-- memberships it deletes clear team_id after the organization's own trigger cleared org_id)
-- and of deleting a team or an organization.
create or replace function private.unshare_on_leaving_team() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.hold_journal_gate(old.user_id, true);
  update public.journal_entries set team_id = null where team_id = old.team_id and user_id = old.user_id;
  update public.notebooks set team_id = null where team_id = old.team_id and user_id = old.user_id;
  return null;
end
$$;
comment on function private.unshare_on_leaving_team() is
  'After a team membership is deleted: takes the member''s journal gate exclusively, then takes their entries and notebooks out of the team.';
revoke execute on function private.unshare_on_leaving_team() from public, anon, authenticated;

create or replace function private.unshare_on_leaving_org() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.hold_journal_gate(old.user_id, true);
  update public.journal_entries set org_id = null where org_id = old.org_id and user_id = old.user_id;
  update public.notebooks set org_id = null where org_id = old.org_id and user_id = old.user_id;
  return null;
end
$$;
comment on function private.unshare_on_leaving_org() is
  'After an organization membership is deleted (its team memberships went first, by cascade): takes the member''s journal gate exclusively, then takes their entries and notebooks out of the organization.';
revoke execute on function private.unshare_on_leaving_org() from public, anon, authenticated;

create trigger team_members_unshare_on_leaving after delete on public.team_members
  for each row execute function private.unshare_on_leaving_team();
create trigger organization_members_unshare_on_leaving after delete on public.organization_members
  for each row execute function private.unshare_on_leaving_org();

comment on function private.orphan_safe_level(text, uuid, uuid) is
  'A level naming a team/organization whose id was cleared (the owner left it, or it was deleted) falls back to user.';

-- =======================================================================================
-- 2. Engagement against the recipient's baseline.
-- =======================================================================================
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
revoke all on private.encouragement_drop_baselines from public, anon, authenticated, service_role;

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
revoke execute on function private.freeze_engagement_baselines(uuid[]) from public, anon, authenticated;

-- Every path that writes a drop (send_encouragement_drop, send_assistant_drop) freezes its
-- baseline in the same statement: a statement trigger, so a bulk insert stays one query.
create or replace function private.freeze_sent_drop_baselines() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.freeze_engagement_baselines(array(select s.id from sent s));
  return null;
end
$$;
comment on function private.freeze_sent_drop_baselines() is 'After drops are written: freezes their recipients'' baselines.';
revoke execute on function private.freeze_sent_drop_baselines() from public, anon, authenticated;
create trigger encouragement_sent_drops_freeze_baseline after insert on public.encouragement_sent_drops
  referencing new table as sent
  for each statement execute function private.freeze_sent_drop_baselines();

-- Drops already waiting for judgement get theirs as of now.
select private.freeze_engagement_baselines(array(
  select d.id from public.encouragement_sent_drops d where not d.engagement_checked));

-- Supersedes private.process_encouragement_engagement of 20261122040000_encouragement.sql.
-- Only the judgement (`observed`: activity after the drop against the frozen baseline; a
-- drop without one is never engaged) and the pruning at the end are new; paying, the
-- one-bonus-per-pair-and-day rule and the badges are as before.
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

  with candidates as (
    select d.id, d.sender_id, d.recipient_id, d.sent_day, d.date_sent, d.is_system
      from public.encouragement_sent_drops d
     where not d.engagement_checked
     order by d.date_sent
     limit max_drops
       for update skip locked
  ),
  observed as materialized (
    -- The activity that passed the frozen baseline: one range scan per table over the window.
    select c.*, r.is_ai as recipient_is_ai,
           case when b.established then (
             select t.at
               from (select e.created_at as at from public.journal_entries e
                      where e.user_id = c.recipient_id
                        and e.created_at > c.date_sent and e.created_at <= c.date_sent + window_length
                     union all
                     select g.created_at from public.goal_check_ins g
                      where g.user_id = c.recipient_id
                        and g.created_at > c.date_sent and g.created_at <= c.date_sent + window_length) t
              order by t.at
             offset b.activity / 7 limit 1)
           end as engaged_at
      from candidates c
      join public.profiles r on r.id = c.recipient_id
      left join private.encouragement_drop_baselines b on b.drop_id = c.id
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
  'Judges due drops against each recipient''s baseline frozen at sending (established account, more activity in the window than their average per window over the 7 windows before), pays bonuses once per pair and day, recalculates badges, prunes old bonus pairs.';

comment on column public.encouragement_sent_drops.engaged_at is
  'When the recipient''s journal entries and goal check-ins after the drop passed their baseline (their average per window over the 7 windows before it, frozen when the drop was sent), within the engagement window; null if they did not (or their account was too new to have a baseline).';

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
