-- =============================================================================================
-- Organizations and teams
-- =============================================================================================
-- Organizations (owner/admin/member) and teams inside them. Membership drives who may see
-- shared journal entries, so every rule here is enforced in the database: RLS for reads and
-- simple writes, guard triggers for what RLS cannot express per column, SQL functions for
-- multi-step changes (ownership transfer, member listing with names). A team membership
-- cannot outlive the organization membership (a foreign key), and whoever is added by someone
-- else is told (notifications/inbox.sql).

-- ---------------------------------------------------------------------------------------------
-- Tables
-- ---------------------------------------------------------------------------------------------

create table public.organizations (
  id uuid primary key default gen_random_uuid(),
  name text not null check (char_length(btrim(name)) between 1 and 200),
  description text check (char_length(description) <= 2000),
  owner_id uuid not null references public.profiles (id),
  settings jsonb not null default '{}'::jsonb check (jsonb_typeof(settings) = 'object' and pg_column_size(settings) <= 16384),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
alter table public.organizations enable row level security;
comment on table public.organizations is 'Organizations; owner_id mirrors the single owner row in organization_members.';
revoke all on public.organizations from anon, authenticated;
grant select, delete on public.organizations to authenticated;
grant insert (id, name, description, owner_id, settings), update (name, description, settings)
  on public.organizations to authenticated;
create index organizations_owner on public.organizations (owner_id);

create table public.organization_members (
  org_id uuid not null references public.organizations (id) on delete cascade,
  user_id uuid not null references public.profiles (id) on delete cascade,
  role text not null check (role in ('owner', 'admin', 'member')),
  joined_at timestamptz not null default now(),
  primary key (org_id, user_id)
);
alter table public.organization_members enable row level security;
comment on table public.organization_members is 'Who belongs to which organization, with their role (the owner included).';
revoke all on public.organization_members from anon, authenticated;
grant select, delete on public.organization_members to authenticated;
grant insert (org_id, user_id, role), update (role)
  on public.organization_members to authenticated;
create index organization_members_by_user on public.organization_members (user_id, org_id);
create unique index organization_members_one_owner on public.organization_members (org_id) where role = 'owner';

create table public.teams (
  id uuid primary key default gen_random_uuid(),
  name text not null check (char_length(btrim(name)) between 1 and 200),
  description text check (char_length(description) <= 2000),
  org_id uuid not null references public.organizations (id) on delete cascade,
  admin_id uuid not null references public.profiles (id),
  settings jsonb not null default '{}'::jsonb check (jsonb_typeof(settings) = 'object' and pg_column_size(settings) <= 16384),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
alter table public.teams enable row level security;
comment on table public.teams is 'Teams inside an organization; admin_id is the team''s admin (also a member row with role admin).';
revoke all on public.teams from anon, authenticated;
grant select, delete on public.teams to authenticated;
grant insert (id, name, description, org_id, admin_id, settings), update (name, description, admin_id, settings)
  on public.teams to authenticated;
create index teams_org on public.teams (org_id);
create index teams_admin on public.teams (admin_id);

create table public.team_members (
  team_id uuid not null references public.teams (id) on delete cascade,
  user_id uuid not null references public.profiles (id) on delete cascade,
  role text not null check (role in ('admin', 'member')),
  joined_at timestamptz not null default now(),
  org_id uuid not null,
  primary key (team_id, user_id),
  constraint team_members_org_membership foreign key (org_id, user_id)
    references public.organization_members (org_id, user_id) on delete cascade
);
alter table public.team_members enable row level security;
--   add constraint team_members_org_membership foreign key (org_id, user_id)
--   references public.organization_members (org_id, user_id) on delete cascade;
comment on table public.team_members is 'Who belongs to which team; every member is also a member of the team''s organization.';
comment on column public.team_members.org_id is
  'The team''s organization (set by trigger from teams.org_id, which never changes); the key to organization_members.';
revoke all on public.team_members from anon, authenticated;
grant select, delete on public.team_members to authenticated;
grant insert (team_id, user_id, role), update (role)
  on public.team_members to authenticated;
create index team_members_by_user on public.team_members (user_id, team_id);
-- The foreign key's index, also the one the read policy below matches.
create index team_members_by_org on public.team_members (org_id, user_id);

-- ---------------------------------------------------------------------------------------------
-- Field rules in words
-- ---------------------------------------------------------------------------------------------
-- The columns' rules as /api says them (conventions.sql, "Field rules in words"), before the
-- check constraints could answer with only a constraint name.

-- Name, description and settings, alike for an organization and a team.
create or replace function private.check_group_fields(name text, description text, settings jsonb) returns void
language plpgsql immutable
set search_path = ''
as $$
begin
  perform private.check_required('name', check_group_fields.name);
  perform private.check_length('name', btrim(check_group_fields.name), 200);
  perform private.check_max_length('description', check_group_fields.description, 2000);
  perform private.check_required('settings', check_group_fields.settings);
  perform private.check_object('settings', check_group_fields.settings, 16384);
end
$$;
grant execute on function private.check_group_fields(text, text, jsonb) to authenticated, service_role;

create or replace function private.check_organization_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_group_fields(new.name, new.description, new.settings);
  perform private.check_required('owner_id', new.owner_id);
  return new;
end
$$;
create trigger organizations_check_fields before insert or update of name, description, owner_id, settings
  on public.organizations
  for each row execute function private.check_organization_fields();

create or replace function private.check_team_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_group_fields(new.name, new.description, new.settings);
  perform private.check_required('org_id', new.org_id);
  perform private.check_required('admin_id', new.admin_id);
  return new;
end
$$;
create trigger teams_check_fields before insert or update of name, description, org_id, admin_id, settings
  on public.teams
  for each row execute function private.check_team_fields();

-- A member's user and role; the roles allowed are the trigger's arguments.
create or replace function private.check_member_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_required('user_id', new.user_id);
  perform private.check_required('role', new.role);
  perform private.check_one_of('role', new.role, tg_argv);
  return new;
end
$$;
create trigger organization_members_check_fields before insert or update of user_id, role
  on public.organization_members
  for each row execute function private.check_member_fields('owner', 'admin', 'member');
create trigger team_members_check_fields before insert or update of user_id, role
  on public.team_members
  for each row execute function private.check_member_fields('admin', 'member');

-- ---------------------------------------------------------------------------------------------
-- Membership helpers
-- ---------------------------------------------------------------------------------------------
-- Security definer, so policies can ask about memberships the caller may not read. PL/pgSQL
-- so the plan is cached per session: policies call these many times per query. Used as
-- `x in (select private.my_org_ids())` they are computed once per statement.

-- The organizations the caller belongs to (definer: policies ask without recursing into
-- organization_members' own policies).
create or replace function private.my_org_ids() returns setof uuid
language plpgsql stable security definer
set search_path = ''
rows 10
as $$
begin
  return query select org_id from public.organization_members where user_id = (select auth.uid());
end
$$;
grant execute on function private.my_org_ids() to authenticated, service_role;

-- The teams the caller belongs to (definer, as my_org_ids).
create or replace function private.my_team_ids() returns setof uuid
language plpgsql stable security definer
set search_path = ''
rows 20
as $$
begin
  return query select team_id from public.team_members where user_id = (select auth.uid());
end
$$;
grant execute on function private.my_team_ids() to authenticated, service_role;

-- The same sets as arrays, for the journal's read policies: `scope_id = any ((select
-- private.my_team_id_array())::uuid[])` is an InitPlan evaluated once per scan node, where the
-- set form becomes a hashed SubPlan built again in every node (the feed has five). The
-- `::uuid[]` cast keeps it an array comparison rather than an ANY-subquery.
create or replace function private.my_team_id_array() returns uuid[]
language plpgsql stable security definer
set search_path = ''
as $$
begin
  return array(select team_id from public.team_members where user_id = (select auth.uid()));
end
$$;
comment on function private.my_team_id_array() is
  'The caller''s team ids as one array (for policies: one InitPlan per scan instead of a hashed subplan).';
grant execute on function private.my_team_id_array() to authenticated, service_role;
create or replace function private.my_org_id_array() returns uuid[]
language plpgsql stable security definer
set search_path = ''
as $$
begin
  return array(select org_id from public.organization_members where user_id = (select auth.uid()));
end
$$;
comment on function private.my_org_id_array() is
  'The caller''s organization ids as one array (for policies: one InitPlan per scan instead of a hashed subplan).';
grant execute on function private.my_org_id_array() to authenticated, service_role;

-- The caller's role in an organization (null: not a member).
create or replace function private.org_role(target_org uuid) returns text
language sql stable security definer
set search_path = ''
as $$
  select role from public.organization_members where org_id = target_org and user_id = (select auth.uid())
$$;
grant execute on function private.org_role(uuid) to authenticated, service_role;

-- Whether the caller belongs to an organization.
create or replace function private.is_org_member(target_org uuid) returns boolean
language sql stable security definer
set search_path = ''
as $$ select private.org_role(target_org) is not null $$;
grant execute on function private.is_org_member(uuid) to authenticated, service_role;

-- Whether the caller owns an organization.
create or replace function private.is_org_owner(target_org uuid) returns boolean
language sql stable security definer
set search_path = ''
as $$ select private.org_role(target_org) = 'owner' $$;
grant execute on function private.is_org_owner(uuid) to authenticated, service_role;

-- The organization a team belongs to.
create or replace function private.team_org(target_team uuid) returns uuid
language sql stable security definer
set search_path = ''
as $$ select org_id from public.teams where id = target_team $$;
grant execute on function private.team_org(uuid) to authenticated, service_role;
-- Team admins: the team's admin_id and members with role admin.
create or replace function private.is_team_admin(target_team uuid) returns boolean
language sql stable security definer
set search_path = ''
as $$
  select exists (
    select 1 from public.team_members
     where team_id = target_team and user_id = (select auth.uid()) and role = 'admin'
  )
$$;
grant execute on function private.is_team_admin(uuid) to authenticated, service_role;

-- Whether the caller belongs to a team.
create or replace function private.is_team_member(target_team uuid) returns boolean
language sql stable security definer
set search_path = ''
as $$ select target_team in (select private.my_team_ids()) $$;
grant execute on function private.is_team_member(uuid) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Organizations
-- ---------------------------------------------------------------------------------------------

create policy "organizations: members and super admins read" on public.organizations
  for select to authenticated
  using (owner_id = (select auth.uid()) or id in (select private.my_org_ids()) or (select private.is_super_admin()));
comment on policy "organizations: members and super admins read" on public.organizations is
  'owner_id is checked too, so the creator can read the row back before the owner membership exists.';
create policy "organizations: any user creates, as owner" on public.organizations
  for insert to authenticated
  with check (owner_id = (select auth.uid()));
create policy "organizations: owners and super admins update" on public.organizations
  for update to authenticated
  using (owner_id = (select auth.uid()) or (select private.is_super_admin()))
  with check (owner_id = (select auth.uid()) or (select private.is_super_admin()));
create policy "organizations: owners and super admins delete" on public.organizations
  for delete to authenticated
  using (owner_id = (select auth.uid()) or (select private.is_super_admin()));
create policy "organization_members: members and super admins read" on public.organization_members
  for select to authenticated
  using (org_id in (select private.my_org_ids()) or (select private.is_super_admin()));
create policy "organization_members: owners and super admins add" on public.organization_members
  for insert to authenticated
  with check (role <> 'owner' and ((select private.is_org_owner(org_id)) or (select private.is_super_admin())));
comment on policy "organization_members: owners and super admins add" on public.organization_members is
  'Nobody is inserted as owner: ownership moves only through transfer_organization_ownership().';
create policy "organization_members: owners and super admins change roles" on public.organization_members
  for update to authenticated
  using (role <> 'owner' and ((select private.is_org_owner(org_id)) or (select private.is_super_admin())))
  with check (role <> 'owner');
create policy "organization_members: owners remove members, members remove themselves" on public.organization_members
  for delete to authenticated
  using (
    role <> 'owner'
    and (user_id = (select auth.uid()) or (select private.is_org_owner(org_id)) or (select private.is_super_admin()))
  );
comment on policy "organization_members: owners remove members, members remove themselves" on public.organization_members is
  'The owner row stays until ownership is transferred; deleting the organization removes it.';

-- The creator becomes the owner member.
create or replace function private.add_owner_membership() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  insert into public.organization_members (org_id, user_id, role) values (new.id, new.owner_id, 'owner');
  return null;
end
$$;
create trigger organizations_owner_membership
  after insert on public.organizations
  for each row execute function private.add_owner_membership();
create trigger organizations_touch before update on public.organizations
  for each row execute function private.touch_updated_at();

-- Leaving an organization means leaving its teams; a team whose admin leaves falls to the
-- organization's owner.
create or replace function private.leave_org_teams() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  owner uuid;
begin
  select owner_id into owner from public.organizations where id = old.org_id;
  if owner is null then
    return null; -- the organization itself is being deleted; its teams go with it
  end if;
  insert into public.team_members (team_id, user_id, role)
  select t.id, owner, 'admin' from public.teams t where t.org_id = old.org_id and t.admin_id = old.user_id
  on conflict (team_id, user_id) do update set role = 'admin';
  update public.teams set admin_id = owner where org_id = old.org_id and admin_id = old.user_id;
  delete from public.team_members tm using public.teams t
   where t.id = tm.team_id and t.org_id = old.org_id and tm.user_id = old.user_id;
  return null;
end
$$;
create trigger organization_members_leave_teams
  after delete on public.organization_members
  for each row execute function private.leave_org_teams();

-- POST /api/organizations/:id/transfer-ownership (and POST members with role owner).
-- Ownership goes only to an existing member (a super admin's transfer too), and an unknown
-- user id gets the same answer as someone outside the organization.
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
grant execute on function public.transfer_organization_ownership(uuid, uuid) to authenticated;

-- Member list with names: profiles are private, so this returns only the public fields of
-- people who share the organization with the caller.
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
    select m.user_id, c.full_name, c.avatar_url, m.role, m.role = 'owner',
           case when m.role = 'owner' then null else m.joined_at end
      from public.organization_members m
      join public.profiles p on p.id = m.user_id
      cross join lateral private.person_card(m.user_id, p.full_name, p.avatar_url) c
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
grant execute on function public.list_organization_members(uuid) to authenticated;

-- GET /api/organizations/{id}/members?q=&limit=&before=: a page of members whose name contains
-- q (any case), in the order of the list above (owner first, then by joining), after the
-- member the cursor names. Members and super admins only, as the list.
create or replace function private.search_organization_members(
  target_org uuid, q text, after_user_id uuid, page_size integer
) returns table (user_id uuid, full_name text, avatar_url text, role text, is_owner boolean, joined_at timestamptz)
language plpgsql stable security definer
set search_path = ''
as $$
declare
  pattern text := '%' || replace(replace(replace(q, '\', '\\'), '%', '\%'), '_', '\_') || '%';
  after_rest boolean; -- the cursor's member is not the owner
  after_joined timestamptz;
begin
  if not (private.is_org_member(target_org) or private.is_super_admin()) then
    raise exception 'organization not found' using errcode = 'PT404';
  end if;
  if char_length(q) > 200 then
    raise exception 'q: at most 200 characters' using errcode = '22023';
  end if;
  if after_user_id is not null then
    select m.role <> 'owner', m.joined_at into after_rest, after_joined
      from public.organization_members m where m.org_id = target_org and m.user_id = after_user_id;
    if after_rest is null then
      raise exception 'before: the member this cursor names has left; start from the first page' using errcode = '22023';
    end if;
  end if;
  return query
    select m.user_id, c.full_name, c.avatar_url, m.role, m.role = 'owner',
           case when m.role = 'owner' then null else m.joined_at end
      from public.organization_members m
      join public.profiles p on p.id = m.user_id
      cross join lateral private.person_card(m.user_id, p.full_name, p.avatar_url) c
     where m.org_id = target_org
       and (nullif(q, '') is null or c.full_name ilike pattern) -- the name shown, never a masked one
       and (after_user_id is null or (m.role <> 'owner', m.joined_at, m.user_id) > (after_rest, after_joined, after_user_id))
     order by (m.role <> 'owner'), m.joined_at, m.user_id
     limit least(greatest(coalesce(page_size, 50), 1), 101);
end
$$;
comment on function private.search_organization_members(uuid, text, uuid, integer) is
  'A page of members (public profile fields) whose name contains q, owner first then by joining, after a member; members and super admins.';
grant execute on function private.search_organization_members(uuid, text, uuid, integer) to authenticated;
create or replace function public.search_organization_members(
  target_org uuid, q text default null, after_user_id uuid default null, page_size integer default 50
) returns table (user_id uuid, full_name text, avatar_url text, role text, is_owner boolean, joined_at timestamptz)
language sql stable security invoker
set search_path = ''
as $$ select * from private.search_organization_members(target_org, q, after_user_id, page_size) $$;
comment on function public.search_organization_members(uuid, text, uuid, integer) is
  'RPC: a page of an organization''s members whose name contains q (members and super admins).';
grant execute on function public.search_organization_members(uuid, text, uuid, integer) to authenticated;

-- Public profiles (id, full_name, avatar_url) of the people who share an organization with the
-- caller, the caller's own, and everyone's for super admins: never of a user with whom the
-- caller shares nothing. profiles stays owner-only (its other columns are private), so the
-- rows come from a security definer function filtered on the caller, and clients read them
-- through public.profile_cards. Not a policy on profiles: a policy would open every column of
-- the row (drops_balance, preferences...), and profiles' policies run in nearly every
-- statement, where this runs only when cards are read. The caller's organizations' members
-- are read from organization_members' (org_id, user_id) key, one organization at a time.
create or replace function private.shared_profile_cards()
returns table (id uuid, full_name text, avatar_url text)
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me uuid := auth.uid();
begin
  if me is null then
    return;
  end if;
  -- Names and avatars through private.person_card (user_data/account.sql): "Deleted user"
  -- while an account is being deleted, as entry authors and member lists show it.
  if private.is_super_admin() then
    return query select p.id, c.full_name, c.avatar_url from public.profiles p
                  cross join lateral private.person_card(p.id, p.full_name, p.avatar_url) c;
    return;
  end if;
  return query
    select p.id, c.full_name, c.avatar_url
      from public.profiles p
      cross join lateral private.person_card(p.id, p.full_name, p.avatar_url) c
     where p.id = me
        or p.id in (select theirs.user_id from public.organization_members theirs
                     where theirs.org_id = any (private.my_org_id_array()));
end
$$;
comment on function private.shared_profile_cards() is
  'Public profile fields of the caller and of the members of the caller''s organizations (super admins: all); read through public.profile_cards.';
grant execute on function private.shared_profile_cards() to authenticated;
create or replace view public.profile_cards with (security_invoker = true) as
select id, full_name, avatar_url from private.shared_profile_cards();
comment on view public.profile_cards is
  'Name and avatar of the caller and of the people who share an organization with them (super admins: everyone).';
revoke all on public.profile_cards from anon, authenticated;
grant select on public.profile_cards to authenticated;

-- ---------------------------------------------------------------------------------------------
-- Teams
-- ---------------------------------------------------------------------------------------------

create policy "teams: organization members and super admins read" on public.teams
  for select to authenticated
  using (org_id in (select private.my_org_ids()) or (select private.is_super_admin()));
create policy "teams: organization members create" on public.teams
  for insert to authenticated
  with check (org_id in (select private.my_org_ids()) or (select private.is_super_admin()));
create policy "teams: team admins, organization owners and super admins update" on public.teams
  for update to authenticated
  using ((select private.is_team_admin(id)) or (select private.is_org_owner(org_id)) or (select private.is_super_admin()))
  with check ((select private.is_team_admin(id)) or (select private.is_org_owner(org_id)) or (select private.is_super_admin()));
comment on policy "teams: team admins, organization owners and super admins update" on public.teams is
  'Which columns each may change is decided by private.guard_team_update().';
create policy "teams: team admins and super admins delete" on public.teams
  for delete to authenticated
  using ((select private.is_team_admin(id)) or (select private.is_super_admin()));
create policy "team_members: organization members and super admins read" on public.team_members
  for select to authenticated
  using (org_id in (select private.my_org_ids()) or (select private.is_super_admin()));
create policy "team_members: team admins and super admins add" on public.team_members
  for insert to authenticated
  with check ((select private.is_team_admin(team_id)) or (select private.is_super_admin()));
create policy "team_members: team admins and super admins change roles" on public.team_members
  for update to authenticated
  using ((select private.is_team_admin(team_id)) or (select private.is_super_admin()))
  with check ((select private.is_team_admin(team_id)) or (select private.is_super_admin()));
create policy "team_members: team admins remove members, members remove themselves" on public.team_members
  for delete to authenticated
  using (user_id = (select auth.uid()) or (select private.is_team_admin(team_id)) or (select private.is_super_admin()));

-- Team admins change name and description; only organization owners (and super admins)
-- change admin_id, and the new admin must belong to the organization.
create or replace function private.guard_team_update() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if new.org_id is distinct from old.org_id then
    raise exception 'a team cannot move to another organization' using errcode = '42501';
  end if;
  if current_user not in ('authenticated', 'anon') or private.is_super_admin() then
    return new;
  end if;
  if new.admin_id is distinct from old.admin_id and not private.is_org_owner(new.org_id) then
    raise exception 'only organization owners may change admin_id' using errcode = '42501';
  end if;
  if (new.name, new.description, new.settings) is distinct from (old.name, old.description, old.settings)
     and not private.is_team_admin(new.id) then
    raise exception 'only team admins may change the team''s name, description and settings' using errcode = '42501';
  end if;
  return new;
end
$$;
create trigger teams_guard_update before update on public.teams
  for each row execute function private.guard_team_update();
create trigger teams_touch before update on public.teams
  for each row execute function private.touch_updated_at();

-- The admin must be an organization member; they become (or stay) an admin member.
create or replace function private.sync_team_admin() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  if not exists (select 1 from public.organization_members where org_id = new.org_id and user_id = new.admin_id) then
    raise exception 'admin_id: the team admin must be a member of the organization' using errcode = '22023';
  end if;
  insert into public.team_members (team_id, user_id, role) values (new.id, new.admin_id, 'admin')
  on conflict (team_id, user_id) do update set role = 'admin';
  return null;
end
$$;
create trigger teams_sync_admin after insert or update of admin_id on public.teams
  for each row execute function private.sync_team_admin();

-- A member row carries its team's organization, the key of its foreign key to
-- organization_members. Named to run before team_members_guard (triggers fire in name order).
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
create trigger team_members_copy_org before insert or update of team_id, org_id on public.team_members
  for each row execute function private.copy_team_org();

-- A team member must already be an organization member; the team's admin_id keeps role admin
-- and is not removed (change admin_id first).
create or replace function private.guard_team_member() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  team public.teams;
begin
  select * into team from public.teams where id = coalesce(new.team_id, old.team_id);
  if team.id is null then
    return coalesce(new, old); -- the team is being deleted
  end if;
  -- Permission first (as RLS would), so outsiders learn nothing about the team; inserts
  -- made by our own triggers (the admin's row, depth > 1) are already authorized.
  if tg_op = 'INSERT' and pg_trigger_depth() = 1 and (select auth.uid()) is not null
     and not (private.is_team_admin(team.id) or private.is_super_admin()) then
    raise exception 'new row violates row-level security policy for table "team_members"' using errcode = '42501';
  end if;
  if tg_op = 'INSERT' and not exists (
    select 1 from public.organization_members where org_id = team.org_id and user_id = new.user_id
  ) then
    raise exception 'user_id: must already be a member of the team''s organization' using errcode = '22023';
  end if;
  if tg_op = 'UPDATE' and old.user_id = team.admin_id and new.role <> 'admin' then
    raise exception 'the team admin''s role cannot be changed here; change the team''s admin_id' using errcode = '42501';
  end if;
  if tg_op = 'DELETE' and old.user_id = team.admin_id and pg_trigger_depth() = 1 then
    raise exception 'the team admin cannot be removed; change the team''s admin_id first' using errcode = '42501';
  end if;
  return coalesce(new, old);
end
$$;
create trigger team_members_guard before insert or update or delete on public.team_members
  for each row execute function private.guard_team_member();

-- Member list with names, for members of the team's organization.
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
    select m.user_id, c.full_name, c.avatar_url, m.role, m.user_id = team.admin_id,
           case when m.user_id = team.admin_id then null else m.joined_at end
      from public.team_members m
      join public.profiles p on p.id = m.user_id
      cross join lateral private.person_card(m.user_id, p.full_name, p.avatar_url) c
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
grant execute on function public.list_team_members(uuid) to authenticated;

-- ---------------------------------------------------------------------------------------------
-- Telling people they were added
-- ---------------------------------------------------------------------------------------------
-- Whoever is added to an organization or a team by someone else is told, and may leave (the
-- delete policies let every member but the owner remove themselves; leaving the organization
-- leaves its teams, including one they were made admin of). Joining by oneself (creating an
-- organization or a team) needs no notice.

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
