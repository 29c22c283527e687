-- Advisor-clean SQL and the security review's database findings (issue 6).
--
-- 1. No security definer function in the exposed schema: the nine RPCs that needed elevated
--    rights become security invoker wrappers (same name, arguments and result) around a
--    security definer function in `private` that checks its caller itself.
-- 2. journal_feed gets a fixed search_path; it becomes PL/pgSQL (see its comment for why).
-- 3. "Not found" from SQL is `PT404`, which PostgREST answers as 404 (was P0002: a 500).
-- 4. Team membership hangs off organization membership by a foreign key (finding 2).
-- 5. Entries created in or moved into a notebook re-check the notebook's team/organization
--    against the writer's current memberships (finding 3).
-- 6. Ownership goes only to an existing member; people added to an organization or team are
--    told through the new, general `public.notifications` table (finding 4).
-- 7. Client roles no longer read the internal scope columns, except the one the feed's
--    index conditions need, which tells a signed-in reader nothing new (finding 8).
--
-- Index review (Supabase's INFO lints, sql/lint/splinter.sql, after `npm run bench`): no index
-- was dropped. Every index the "unused_index" lint lists after the bench serves a query in the
-- code or a foreign key, the latter so that deleting or changing the referenced row does not
-- scan the whole referencing table:
--   drops_transactions_user_history  GET /api/drops/transactions (newest first); FK user_id
--   goals_by_owner                   GET /api/goals (newest first); FK user_id
--   goal_check_ins_by_goal           GET /api/goals/:id (its check-ins, newest first); FK goal_id
--   goal_check_ins_by_owner          FK user_id
--   notebooks_by_owner               GET /api/notebooks (newest first); FK user_id
--   notebooks_team, notebooks_org    FK team_id, org_id (set null when a team/org goes)
--   journal_entries_notebook         journal_feed(notebook_id); re-deriving a notebook's entries; FK
--   journal_entries_team, _org       FK team_id, org_id (set null when a team/org goes)
--   journal_entry_contents_owner     backfill_mentions (the caller's unindexed texts); FK user_id
--   journal_entry_mentions_user      FK mentioned_user_id
--   organizations_owner              FK owner_id
--   teams_org                        GET /api/teams?org_id=; leaving an organization; FK org_id
--   teams_admin                      FK admin_id
--   subscriptions_user_status        private.is_premium (the monthly award); FK user_id
-- No table lacks a primary key and every foreign key leads an index (the schema lint checks
-- both); the new ones below come with theirs.

-- =======================================================================================
-- 1. Exposed RPCs are security invoker; the elevated part lives in `private`.
--
-- Each private function is granted only to the roles that call the public one, and checks
-- the caller as before. `create or replace` keeps each public function's grants.
-- =======================================================================================

-- Drops ledger ---------------------------------------------------------------------------

create or replace function private.admin_adjust_drops(
  target_user_id uuid,
  delta integer,
  reason text,
  source text default 'admin'
) returns public.drops_transactions
language plpgsql security definer
set search_path = ''
as $$
declare
  row public.drops_transactions;
  violated text;
begin
  if not private.is_trusted_caller() then
    raise exception 'only super admins may adjust drops' using errcode = '42501';
  end if;
  if delta is null or delta = 0 then
    raise exception 'delta must be a non-zero integer' using errcode = '22023';
  end if;
  if reason is null or btrim(reason) = '' then
    raise exception 'reason is required' using errcode = '22023';
  end if;
  if not exists (select 1 from public.profiles where id = target_user_id) then
    raise exception 'no user %', target_user_id using errcode = 'PT404';
  end if;
  begin
    insert into public.drops_transactions (user_id, amount, type, description, reason, source, created_by)
    values (target_user_id, delta, 'admin_adjustment', 'Adjustment: ' || left(btrim(reason), 400),
            btrim(reason), coalesce(nullif(btrim(source), ''), 'admin'), (select auth.uid()))
    returning * into row;
  exception when check_violation then
    get stacked diagnostics violated = constraint_name;
    if violated = 'profiles_drops_balance_check' then
      raise exception 'insufficient drops: the balance cannot go below zero' using errcode = '23514';
    end if;
    raise;
  end;
  return row;
end
$$;
comment on function private.admin_adjust_drops(uuid, integer, text, text) is
  'Super admins, the service role and direct sessions: adds a signed admin_adjustment row with a reason.';
grant execute on function private.admin_adjust_drops(uuid, integer, text, text) to authenticated, service_role;

create or replace function public.admin_adjust_drops(
  target_user_id uuid,
  delta integer,
  reason text,
  source text default 'admin'
) returns public.drops_transactions
language sql security invoker
set search_path = ''
as $$ select * from private.admin_adjust_drops(target_user_id, delta, reason, source) $$;

create or replace function private.recompute_drops_balance(target_user_id uuid) returns integer
language plpgsql security definer
set search_path = ''
as $$
declare
  balance integer;
begin
  if not private.is_trusted_caller() then
    raise exception 'only super admins may recompute balances' using errcode = '42501';
  end if;
  perform 1 from public.profiles where id = target_user_id for update;
  if not found then
    raise exception 'no user %', target_user_id using errcode = 'PT404';
  end if;
  perform set_config('app.recomputing_balance', 'on', true);
  update public.profiles set drops_balance = private.ledger_balance(target_user_id)
   where id = target_user_id
  returning drops_balance into balance;
  perform set_config('app.recomputing_balance', 'off', true);
  return balance;
end
$$;
comment on function private.recompute_drops_balance(uuid) is
  'Super admins, the service role and direct sessions: re-derives a stored balance from the ledger.';
grant execute on function private.recompute_drops_balance(uuid) to authenticated, service_role;

create or replace function public.recompute_drops_balance(target_user_id uuid) returns integer
language sql security invoker
set search_path = ''
as $$ select private.recompute_drops_balance(target_user_id) $$;

-- Monthly drops --------------------------------------------------------------------------

create or replace function private.award_my_monthly_drops()
returns table (awarded boolean, amount integer, award_month date, balance integer)
language plpgsql security definer
set search_path = ''
as $$
declare
  uid uuid := (select auth.uid());
  month date := private.current_award_month();
  result record;
begin
  if uid is null then
    raise exception 'sign in to receive monthly drops' using errcode = '42501';
  end if;
  select * into result from private.award_monthly_drops(array[uid], month);
  return query
    select result.awarded = 1, a.amount, month, p.drops_balance
      from public.profiles p
      left join public.monthly_drop_awards a on a.user_id = p.id and a.award_month = month
     where p.id = uid;
end
$$;
comment on function private.award_my_monthly_drops() is 'The signed-in caller''s monthly award (once per month).';
grant execute on function private.award_my_monthly_drops() to authenticated;

create or replace function public.award_monthly_drops()
returns table (awarded boolean, amount integer, award_month date, balance integer)
language sql security invoker
set search_path = ''
as $$ select * from private.award_my_monthly_drops() $$;

create or replace function private.award_everyone_monthly_drops()
returns table (awarded integer, skipped integer, award_month date)
language plpgsql security definer
set search_path = ''
as $$
declare
  month date := private.current_award_month();
begin
  if not private.is_trusted_caller() then
    raise exception 'only the scheduler, the service role or a super admin may award all users'
      using errcode = '42501';
  end if;
  return query select r.awarded, r.skipped, month from private.award_monthly_drops(null, month) r;
end
$$;
comment on function private.award_everyone_monthly_drops() is
  'The monthly job: every user''s award at once (scheduler, service role, super admins).';
grant execute on function private.award_everyone_monthly_drops() to authenticated, service_role;

create or replace function public.award_monthly_drops_all()
returns table (awarded integer, skipped integer, award_month date)
language sql security invoker
set search_path = ''
as $$ select * from private.award_everyone_monthly_drops() $$;

-- Health ---------------------------------------------------------------------------------

create or replace function private.applied_migrations()
returns table (version text, name text)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'only super admins may read the migration history' using errcode = '42501';
  end if;
  return query select m.version, m.name from supabase_migrations.schema_migrations m order by m.version;
end
$$;
comment on function private.applied_migrations() is 'Super admins: migrations recorded as applied.';
grant execute on function private.applied_migrations() to authenticated, service_role;

create or replace function public.applied_migrations()
returns table (version text, name text)
language sql stable security invoker
set search_path = ''
as $$ select * from private.applied_migrations() $$;

-- Mentions -------------------------------------------------------------------------------

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
comment on function private.backfill_mentions(integer) is
  'Indexes one batch of the caller''s own texts written before the mention index; returns how many remain.';
grant execute on function private.backfill_mentions(integer) to authenticated;

create or replace function public.backfill_mentions(batch_size integer default 200) returns integer
language sql security invoker
set search_path = ''
as $$ select private.backfill_mentions(batch_size) $$;

-- =======================================================================================
-- 2. Notifications: a general inbox (finding 4 is its first user).
-- =======================================================================================

create table public.notifications (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references public.profiles (id) on delete cascade,
  type text not null check (char_length(type) <= 100 and type ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$'),
  payload jsonb not null default '{}'::jsonb check (jsonb_typeof(payload) = 'object' and pg_column_size(payload) <= 8192),
  created_at timestamptz not null default now(),
  read_at timestamptz
);
comment on table public.notifications is
  'Things a user is told: one row per recipient and event. Written only by security definer SQL '
  '(private.notify); recipients read theirs and mark them read. Reused by later features '
  '(workout baton pass, check-in reminders, labs step prompts).';
comment on column public.notifications.type is
  'What happened, as area.event (organization.member_added, team.member_added, organization.ownership_received, ...).';
comment on column public.notifications.payload is
  'The event''s details (ids and names the recipient may see), a JSON object of at most 8 KB.';
comment on column public.notifications.read_at is 'When the recipient marked it read; null while unread.';
-- The inbox, newest first (and the foreign key).
create index notifications_inbox on public.notifications (user_id, created_at desc, id desc);

alter table public.notifications enable row level security;
revoke all on public.notifications from anon, authenticated, service_role;
grant select on public.notifications to authenticated, service_role;
grant update (read_at) on public.notifications to authenticated;

create policy "notifications: recipients read their own" on public.notifications
  for select to authenticated
  using (user_id = (select auth.uid()));
create policy "notifications: recipients mark their own read" on public.notifications
  for update to authenticated
  using (user_id = (select auth.uid()))
  with check (user_id = (select auth.uid()));
comment on policy "notifications: recipients mark their own read" on public.notifications is
  'Only read_at is granted; private.stamp_notification_read sets its value.';

-- Marking read records the server's time (the first one), whatever time the client sent;
-- setting null marks it unread again.
create or replace function private.stamp_notification_read() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if new.read_at is not null then
    new.read_at := coalesce(old.read_at, now());
  end if;
  return new;
end
$$;

create trigger notifications_stamp_read before update of read_at on public.notifications
  for each row execute function private.stamp_notification_read();

-- The one writer: security definer SQL (triggers, jobs) calls it; no client role may.
create or replace function private.notify(recipient uuid, kind text, details jsonb default '{}'::jsonb)
returns uuid
language sql security definer
set search_path = ''
as $$
  insert into public.notifications (user_id, type, payload)
  values (recipient, kind, coalesce(details, '{}'::jsonb))
  returning id
$$;
comment on function private.notify(uuid, text, jsonb) is
  'Adds a notification for one user. Call it from security definer SQL; it is granted to no client role.';
revoke all on function private.notify(uuid, text, jsonb) from public;

-- RPC: mark some (or all) of the caller's notifications read; returns how many changed.
create or replace function public.mark_notifications_read(notification_ids uuid[] default null)
returns integer
language sql security invoker
set search_path = ''
as $$
  with marked as (
    update public.notifications set read_at = now()
     where user_id = (select auth.uid())
       and read_at is null
       and (notification_ids is null or id = any (notification_ids))
    returning 1
  )
  select count(*)::integer from marked
$$;
comment on function public.mark_notifications_read(uuid[]) is
  'Marks the caller''s notifications read (the given ids, or all when null); returns how many were unread.';
grant execute on function public.mark_notifications_read(uuid[]) to authenticated;

-- =======================================================================================
-- 3. Organizations and teams.
-- =======================================================================================

-- Finding 2: a team membership cannot outlive the organization membership. team_members
-- carries its team's organization, and (org_id, user_id) references organization_members
-- with on delete cascade, so a removal from the organization removes the team memberships
-- in the same statement, and a team insert racing that removal fails its foreign key check
-- (it locks the organization membership it references).
alter table public.team_members add column org_id uuid;
comment on column public.team_members.org_id is
  'The team''s organization (set by trigger from teams.org_id, which never changes); the key to organization_members.';

-- Memberships left behind by the race (the team's admin falls to the organization's owner).
update public.teams t set admin_id = o.owner_id
  from public.organizations o
 where o.id = t.org_id
   and not exists (select 1 from public.organization_members m where m.org_id = t.org_id and m.user_id = t.admin_id);
delete from public.team_members tm using public.teams t
 where t.id = tm.team_id
   and not exists (select 1 from public.organization_members m where m.org_id = t.org_id and m.user_id = tm.user_id);
update public.team_members tm set org_id = t.org_id from public.teams t where t.id = tm.team_id;
alter table public.team_members alter column org_id set not null;

create or replace function private.copy_team_org() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  new.org_id := (select t.org_id from public.teams t where t.id = new.team_id);
  return new;
end
$$;
comment on function private.copy_team_org() is 'Keeps team_members.org_id equal to the team''s organization.';

-- Named to run before team_members_guard (triggers fire in name order).
create trigger team_members_copy_org before insert or update of team_id, org_id on public.team_members
  for each row execute function private.copy_team_org();

alter table public.team_members
  add constraint team_members_org_membership foreign key (org_id, user_id)
  references public.organization_members (org_id, user_id) on delete cascade;
-- The foreign key's index, also the one the read policy below matches.
create index team_members_by_org on public.team_members (org_id, user_id);

-- The team's organization is now on the row: no per-row lookup of the team.
drop policy "team_members: organization members and super admins read" on public.team_members;
create policy "team_members: organization members and super admins read" on public.team_members
  for select to authenticated
  using (org_id in (select private.my_org_ids()) or (select private.is_super_admin()));

-- Finding 4: ownership goes only to an existing member (a super admin's transfer too), and
-- an unknown user id gets the same answer as someone outside the organization.
create or replace function private.transfer_organization_ownership(target_org uuid, new_owner_id uuid)
returns public.organizations
language plpgsql security definer
set search_path = ''
as $$
declare
  org public.organizations;
begin
  select * into org from public.organizations where id = target_org for update;
  if org.id is null or not (private.is_org_member(target_org) or private.is_super_admin()) then
    raise exception 'organization not found' using errcode = 'PT404';
  end if;
  if org.owner_id <> (select auth.uid()) and not private.is_super_admin() then
    raise exception 'only the current owner may transfer ownership' using errcode = '42501';
  end if;
  if new_owner_id = org.owner_id then
    return org;
  end if;
  if not exists (select 1 from public.organization_members where org_id = target_org and user_id = new_owner_id) then
    raise exception 'new_owner_id: the new owner must already be a member of the organization' using errcode = '22023';
  end if;
  update public.organization_members set role = 'admin' where org_id = target_org and role = 'owner';
  update public.organization_members set role = 'owner' where org_id = target_org and user_id = new_owner_id;
  update public.organizations set owner_id = new_owner_id where id = target_org returning * into org;
  perform private.notify(new_owner_id, 'organization.ownership_received',
    jsonb_build_object('organization_id', org.id, 'organization_name', org.name, 'by', (select auth.uid())));
  return org;
end
$$;
comment on function private.transfer_organization_ownership(uuid, uuid) is
  'The current owner (or a super admin) hands the organization to one of its members; the old owner stays as admin.';
grant execute on function private.transfer_organization_ownership(uuid, uuid) to authenticated;

create or replace function public.transfer_organization_ownership(target_org uuid, new_owner_id uuid)
returns public.organizations
language sql security invoker
set search_path = ''
as $$ select * from private.transfer_organization_ownership(target_org, new_owner_id) $$;
comment on function public.transfer_organization_ownership(uuid, uuid) is
  'The current owner (or a super admin) hands the organization to one of its members; the old owner stays as admin.';

create or replace function private.list_organization_members(target_org uuid)
returns table (user_id uuid, full_name text, avatar_url text, role text, is_owner boolean, joined_at timestamptz)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if not (private.is_org_member(target_org) or private.is_super_admin()) then
    raise exception 'organization not found' using errcode = 'PT404';
  end if;
  return query
    select m.user_id, p.full_name, p.avatar_url, m.role, m.role = 'owner',
           case when m.role = 'owner' then null else m.joined_at end
      from public.organization_members m
      join public.profiles p on p.id = m.user_id
     where m.org_id = target_org
     order by (m.role = 'owner') desc, m.joined_at, m.user_id;
end
$$;
comment on function private.list_organization_members(uuid) is
  'Members with their public profile fields, for members of the organization and super admins.';
grant execute on function private.list_organization_members(uuid) to authenticated;

create or replace function public.list_organization_members(target_org uuid)
returns table (user_id uuid, full_name text, avatar_url text, role text, is_owner boolean, joined_at timestamptz)
language sql stable security invoker
set search_path = ''
as $$ select * from private.list_organization_members(target_org) $$;

create or replace function private.list_team_members(target_team uuid)
returns table (user_id uuid, full_name text, avatar_url text, role text, is_admin boolean, joined_at timestamptz)
language plpgsql stable security definer
set search_path = ''
as $$
declare
  team public.teams;
begin
  select * into team from public.teams where id = target_team;
  if team.id is null or not (private.is_org_member(team.org_id) or private.is_super_admin()) then
    raise exception 'team not found' using errcode = 'PT404';
  end if;
  return query
    select m.user_id, p.full_name, p.avatar_url, m.role, m.user_id = team.admin_id,
           case when m.user_id = team.admin_id then null else m.joined_at end
      from public.team_members m
      join public.profiles p on p.id = m.user_id
     where m.team_id = target_team
     order by (m.user_id = team.admin_id) desc, m.joined_at, m.user_id;
end
$$;
comment on function private.list_team_members(uuid) is
  'Team members with their public profile fields, for members of the team''s organization and super admins.';
grant execute on function private.list_team_members(uuid) to authenticated;

create or replace function public.list_team_members(target_team uuid)
returns table (user_id uuid, full_name text, avatar_url text, role text, is_admin boolean, joined_at timestamptz)
language sql stable security invoker
set search_path = ''
as $$ select * from private.list_team_members(target_team) $$;

-- Finding 4: whoever is added to an organization or a team by someone else is told, and may
-- leave (the delete policies let every member but the owner remove themselves; leaving the
-- organization leaves its teams, including one they were made admin of). Joining by oneself
-- (creating an organization or a team) needs no notice.
create or replace function private.tell_added_org_member() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  by_whom uuid := (select auth.uid());
begin
  if new.user_id is distinct from by_whom and new.role <> 'owner' then
    perform private.notify(new.user_id, 'organization.member_added', jsonb_build_object(
      'organization_id', new.org_id,
      'organization_name', (select o.name from public.organizations o where o.id = new.org_id),
      'role', new.role, 'by', by_whom));
  end if;
  return null;
end
$$;
comment on function private.tell_added_org_member() is 'Notifies a user someone else added to an organization.';

create trigger organization_members_tell_added after insert on public.organization_members
  for each row execute function private.tell_added_org_member();

create or replace function private.tell_added_team_member() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  by_whom uuid := (select auth.uid());
begin
  if new.user_id is distinct from by_whom then
    perform private.notify(new.user_id, 'team.member_added', jsonb_build_object(
      'team_id', new.team_id,
      'team_name', (select t.name from public.teams t where t.id = new.team_id),
      'organization_id', new.org_id, 'role', new.role, 'by', by_whom));
  end if;
  return null;
end
$$;
comment on function private.tell_added_team_member() is 'Notifies a user someone else added to a team.';

create trigger team_members_tell_added after insert on public.team_members
  for each row execute function private.tell_added_team_member();

-- =======================================================================================
-- 4. Journal.
-- =======================================================================================

-- Finding 3: an entry created in or moved into a notebook takes the notebook's team or
-- organization only while the writer still belongs to it. check_sharing_target (run by
-- journal_entries_prepare) checks the entry's own team_id/org_id; this checks the scopes
-- the entry ends up with, which include what it inherits from the notebook.
create or replace function private.check_inherited_scope() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  uid uuid := (select auth.uid());
begin
  if uid is null or pg_trigger_depth() > 1 or new.notebook_id is null then
    return new; -- trusted sessions; re-derivations by our own triggers; no notebook
  end if;
  if tg_op = 'UPDATE'
     and (new.notebook_id, new.metadata_visibility, new.content_visibility, new.team_id, new.org_id)
         is not distinct from (old.notebook_id, old.metadata_visibility, old.content_visibility, old.team_id, old.org_id) then
    return new;
  end if;
  -- A missing team/org id is the check constraints' to refuse (they name the field).
  if (new.meta_scope = 'team' and new.meta_scope_id is not null and not exists (
        select 1 from public.team_members where team_id = new.meta_scope_id and user_id = uid))
     or (new.content_scope = 'team' and new.content_scope_id is not null and not exists (
        select 1 from public.team_members where team_id = new.content_scope_id and user_id = uid)) then
    raise exception 'notebook_id: this notebook shares with a team you are not a member of' using errcode = '22023';
  end if;
  if (new.meta_scope = 'org' and new.meta_scope_id is not null and not exists (
        select 1 from public.organization_members where org_id = new.meta_scope_id and user_id = uid))
     or (new.content_scope = 'org' and new.content_scope_id is not null and not exists (
        select 1 from public.organization_members where org_id = new.content_scope_id and user_id = uid)) then
    raise exception 'notebook_id: this notebook shares with an organization you are not a member of' using errcode = '22023';
  end if;
  return new;
end
$$;
comment on function private.check_inherited_scope() is
  'Refuses an entry created in or moved into a notebook whose team/organization the writer has left.';

-- Runs after journal_entries_prepare (name order), which derives the scopes.
create trigger journal_entries_scope_membership before insert or update on public.journal_entries
  for each row execute function private.check_inherited_scope();

-- Finding 7: "not found" is PT404 (PostgREST answers 404; P0002 was a 500).
create or replace function public.update_journal_entry(entry_id uuid, patch jsonb)
returns setof public.journal_entry_details
language plpgsql
set search_path = ''
as $$
declare
  updated uuid;
begin
  if jsonb_typeof(patch) is distinct from 'object' then
    raise exception 'patch must be a JSON object' using errcode = '22023';
  end if;
  update public.journal_entries e set
    title = case when patch ? 'title' then patch ->> 'title' else e.title end,
    mood = case when patch ? 'mood' then patch ->> 'mood' else e.mood end,
    tags = case when patch ? 'tags' then array(select jsonb_array_elements_text(patch -> 'tags')) else e.tags end,
    notebook_id = case when patch ? 'notebook_id' then (patch ->> 'notebook_id')::uuid else e.notebook_id end,
    metadata_visibility = case when patch ? 'metadata_visibility' then patch ->> 'metadata_visibility' else e.metadata_visibility end,
    content_visibility = case when patch ? 'content_visibility' then patch ->> 'content_visibility' else e.content_visibility end,
    team_id = case when patch ? 'team_id' then (patch ->> 'team_id')::uuid else e.team_id end,
    org_id = case when patch ? 'org_id' then (patch ->> 'org_id')::uuid else e.org_id end
  where e.id = update_journal_entry.entry_id and e.user_id = (select auth.uid())
  returning e.id into updated;
  if updated is null then
    if exists (select 1 from public.journal_entries e where e.id = update_journal_entry.entry_id) then
      raise exception 'only the owner may change this entry' using errcode = '42501';
    end if;
    raise exception 'entry not found' using errcode = 'PT404';
  end if;
  if patch ? 'content' then
    insert into public.journal_entry_contents as c (entry_id, content)
    values (updated, coalesce(patch ->> 'content', ''))
    on conflict on constraint journal_entry_contents_pkey do update set content = excluded.content;
  end if;
  return query select * from public.journal_entry_details d where d.id = updated;
end
$$;

create or replace function public.update_my_profile(patch jsonb) returns public.profiles
language plpgsql
set search_path = ''
as $$
declare result public.profiles;
begin
  if jsonb_typeof(patch) is distinct from 'object' then
    raise exception 'patch must be a JSON object' using errcode = '22023';
  end if;
  update public.profiles set
    full_name = case when patch ? 'full_name' then patch ->> 'full_name' else full_name end,
    avatar_url = case when patch ? 'avatar_url' then patch ->> 'avatar_url' else avatar_url end,
    preferences = case when patch ? 'preferences' then preferences || (patch -> 'preferences') else preferences end
  where id = (select auth.uid())
  returning * into result;
  if result.id is null then
    raise exception 'profile not found' using errcode = 'PT404';
  end if;
  return result;
end
$$;

/*
 * The visibility feed with a fixed search_path. A SQL function with a SET clause is no
 * longer inlined into the caller's statement and is planned again on every call (measured:
 * 10+ ms a page on the bench's million entries), so this is PL/pgSQL, whose statements keep
 * their plans for the session. Each scope is its own statement (own; own + my teams + my
 * organizations + public), so the generic plan PL/pgSQL keeps reads each branch newest-first
 * from its own index, only the filters the request names being optional; plan_cache_mode
 * is forced to generic because the planner would otherwise re-plan them on every call.
 * (Super admins' pages are planned per call: see there.) The tables' policies apply to
 * every row of every branch (security invoker); the page's content is joined under its own.
 */
create or replace function public.journal_feed(
  scope text default 'own',
  team_id uuid default null,
  org_id uuid default null,
  notebook_id uuid default null,
  mood text default null,
  tag text default null,
  search text default null,
  before_created_at timestamptz default null,
  before_id uuid default null,
  page_size integer default 50
) returns setof public.journal_entry_details
language plpgsql stable
set search_path = ''
set plan_cache_mode = force_generic_plan
as $$
declare
  me uuid := auth.uid(); -- a plain expression: no query per call
  -- No cursor: start after the newest possible entry (keeps the cursor an index condition).
  cursor_at timestamptz := coalesce(journal_feed.before_created_at, 'infinity'::timestamptz);
  cursor_id uuid := coalesce(journal_feed.before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid);
  n integer := least(greatest(coalesce(journal_feed.page_size, 50), 1), 200);
  pattern text := '%' || replace(replace(replace(journal_feed.search, '\', '\\'), '%', '\%'), '_', '\_') || '%';
begin
  if journal_feed.scope is distinct from 'visible' then
    return query
      select p.id, p.user_id, p.notebook_id, p.title, c.content, c.entry_id is null, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at
        from (
          select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                 e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.created_at, e.updated_at
            from public.journal_entries e
           where e.user_id = me
             and (journal_feed.team_id is null or (e.meta_scope = 'team' and e.meta_scope_id = journal_feed.team_id))
             and (journal_feed.org_id is null or (e.meta_scope = 'org' and e.meta_scope_id = journal_feed.org_id))
             and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
             and (journal_feed.mood is null or e.mood = journal_feed.mood)
             and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
             and (journal_feed.search is null or e.title ilike pattern or exists (
                   select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
             and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
           order by e.created_at desc, e.id desc
           limit n) p
        left join public.journal_entry_contents c on c.entry_id = p.id
       order by p.created_at desc, p.id desc;
  elsif private.is_super_admin() then
    -- Super admins may see every entry (rule 6). Planned on each call with the request's
    -- values (EXECUTE): their filters decide the index (a team's or an organization's, a
    -- notebook's, or simply the newest), which one generic plan could not.
    return query execute $feed$
      select p.id, p.user_id, p.notebook_id, p.title, c.content, c.entry_id is null, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at
        from (
          select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                 e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.created_at, e.updated_at
            from public.journal_entries e
           where ($1 is null or (e.meta_scope = 'team' and e.meta_scope_id = $1))
             and ($2 is null or (e.meta_scope = 'org' and e.meta_scope_id = $2))
             and ($3 is null or e.notebook_id = $3)
             and ($4 is null or e.mood = $4)
             and ($5 is null or e.tags @> array[$5])
             and ($6 is null or e.title ilike $6 or exists (
                   select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike $6))
             and e.created_at <= $7 and (e.created_at < $7 or e.id < $8)
           order by e.created_at desc, e.id desc
           limit $9) p
        left join public.journal_entry_contents c on c.entry_id = p.id
       order by p.created_at desc, p.id desc
    $feed$ using journal_feed.team_id, journal_feed.org_id, journal_feed.notebook_id, journal_feed.mood,
                 journal_feed.tag, pattern, cursor_at, cursor_id, n;
  else
    -- Four branches, each newest-first from its own index and limited to the page size.
    return query
      select p.id, p.user_id, p.notebook_id, p.title, c.content, c.entry_id is null, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at
        from (
          select u.* from (
            (select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                    e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.created_at, e.updated_at
               from public.journal_entries e
              where e.user_id = me
                and (journal_feed.team_id is null or (e.meta_scope = 'team' and e.meta_scope_id = journal_feed.team_id))
                and (journal_feed.org_id is null or (e.meta_scope = 'org' and e.meta_scope_id = journal_feed.org_id))
                and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
                and (journal_feed.mood is null or e.mood = journal_feed.mood)
                and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
                and (journal_feed.search is null or e.title ilike pattern or exists (
                      select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
                and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
              order by e.created_at desc, e.id desc
              limit n)
            union all
            (select e.*
               from (select private.my_team_ids() as tid) t
               cross join lateral (
                 select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                        e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.created_at, e.updated_at
                   from public.journal_entries e
                  where journal_feed.org_id is null
                    and e.meta_scope = 'team' and e.meta_scope_id = t.tid and e.user_id <> me
                    and (journal_feed.team_id is null or t.tid = journal_feed.team_id)
                    and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
                    and (journal_feed.mood is null or e.mood = journal_feed.mood)
                    and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
                    and (journal_feed.search is null or e.title ilike pattern or exists (
                          select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
                    and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
                  order by e.created_at desc, e.id desc
                  limit n) e)
            union all
            (select e.*
               from (select private.my_org_ids() as oid) o
               cross join lateral (
                 select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                        e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.created_at, e.updated_at
                   from public.journal_entries e
                  where journal_feed.team_id is null
                    and e.meta_scope = 'org' and e.meta_scope_id = o.oid and e.user_id <> me
                    and (journal_feed.org_id is null or o.oid = journal_feed.org_id)
                    and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
                    and (journal_feed.mood is null or e.mood = journal_feed.mood)
                    and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
                    and (journal_feed.search is null or e.title ilike pattern or exists (
                          select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
                    and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
                  order by e.created_at desc, e.id desc
                  limit n) e)
            union all
            (select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                    e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.created_at, e.updated_at
               from public.journal_entries e
              where journal_feed.team_id is null and journal_feed.org_id is null
                and e.meta_scope = 'public' and e.user_id <> me
                and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
                and (journal_feed.mood is null or e.mood = journal_feed.mood)
                and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
                and (journal_feed.search is null or e.title ilike pattern or exists (
                      select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
                and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
              order by e.created_at desc, e.id desc
              limit n)
          ) u
          order by u.created_at desc, u.id desc
          limit n) p
        left join public.journal_entry_contents c on c.entry_id = p.id
       order by p.created_at desc, p.id desc;
  end if;
end
$$;
comment on function public.journal_feed(text, uuid, uuid, uuid, text, text, text, timestamptz, uuid, integer) is
  'A page of entries the caller may see (scope own or visible), filterable, newest first, keyset-paginated.';

-- Finding 8: the derived scope columns are internal. Anonymous clients read entries,
-- contents and notebooks without them (journal_entry_details has all a reader needs), and
-- signed-in clients read contents without them. Signed-in clients keep journal_entries'
-- scope columns: the feed's index conditions name meta_scope_id, and on every row a
-- signed-in client may read it is null, their own entry's, or a team/organization they
-- belong to (supabase/tests/advisor_clean.test.sql checks this).
revoke select on public.journal_entries from anon;
grant select (id, user_id, notebook_id, title, mood, tags, metadata_visibility, content_visibility, team_id, org_id,
              music_track_id, meta_scope, content_scope, created_at, updated_at)
  on public.journal_entries to anon;
revoke select on public.journal_entry_contents from anon, authenticated;
grant select (entry_id, user_id, content, content_scope, meta_scope, mentions_indexed_at)
  on public.journal_entry_contents to anon, authenticated;
revoke select on public.notebooks from anon;
grant select (id, user_id, name, metadata_visibility, content_visibility, team_id, org_id, created_at, updated_at)
  on public.notebooks to anon;

notify pgrst, 'reload schema';
