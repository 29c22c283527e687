-- =============================================================================================
-- Invitations by e-mail (organizations and teams)
-- =============================================================================================
-- An organization's owner invites an address into the organization; a team's admin invites one
-- into the team (and, when the organization's owner sends it, into the organization too). The
-- link's token is shown once, at creation (/api e-mails it and never returns it); only its
-- SHA-256 is stored. Whoever holds the token reads what the e-mail said; only the signed-in
-- user whose confirmed address is the invited one accepts or declines. Every rule is here, so
-- /api and PostgREST answer alike (docs/invitations.md):
--   - the same reply whether or not the address has an account (no enumeration);
--   - an address already a member: 409; single use; 7 days; revocable;
--   - at most invitation_limits.max_per_day invitations per inviter in any 24 hours (429);
--   - the inviter is notified when the invitation is accepted.

create table public.invitations (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references public.organizations (id) on delete cascade,
  team_id uuid references public.teams (id) on delete cascade,
  email text not null check (email = lower(email) and char_length(email) between 3 and 320),
  role text not null check (role in ('admin', 'member')),
  add_to_organization boolean not null default false check (team_id is not null or not add_to_organization),
  invited_by uuid not null references public.profiles (id) on delete cascade,
  token_hash bytea not null unique,
  status text not null default 'pending' check (status in ('pending', 'accepted', 'declined', 'revoked')),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null default now() + interval '7 days',
  responded_by uuid references public.profiles (id) on delete cascade,
  responded_at timestamptz
);
alter table public.invitations enable row level security;
comment on table public.invitations is
  'Invitations by e-mail into an organization (team_id null) or a team; written only by the invitation functions.';
comment on column public.invitations.token_hash is
  'SHA-256 of the link''s token; no client role may read it (column grants).';
comment on column public.invitations.add_to_organization is
  'A team invitation that also makes the invitee an organization member (sent by the organization''s owner).';
revoke all on public.invitations from anon, authenticated;
grant select (id, org_id, team_id, email, role, add_to_organization, invited_by, status, created_at, expires_at,
              responded_by, responded_at)
  on public.invitations to authenticated;
create index invitations_org on public.invitations (org_id, created_at desc);
create index invitations_team on public.invitations (team_id, created_at desc);
-- The rate limit's count (and the foreign key's index).
create index invitations_by_inviter on public.invitations (invited_by, created_at desc);
create index invitations_responded_by on public.invitations (responded_by);
-- One pending invitation per address and group: a new one replaces it.
create unique index invitations_one_pending on public.invitations
  (org_id, coalesce(team_id, '00000000-0000-0000-0000-000000000000'::uuid), email) where status = 'pending';

-- Invitations one inviter may send in any 24 hours: subject '*' is everyone's, a user id row
-- overrides it for that user. No row: 50.
create table private.invitation_limits (
  subject text primary key default '*',
  max_per_day integer not null check (max_per_day between 0 and 100000)
);
alter table private.invitation_limits enable row level security;
comment on table private.invitation_limits is
  'Invitations per inviter per 24 hours: subject ''*'' for everyone, or a user id (override); none: 50.';

create policy "invitations: inviters, organization owners, team admins and super admins read" on public.invitations
  for select to authenticated
  using (
    invited_by = (select auth.uid())
    or (select private.is_org_owner(org_id))
    or (team_id is not null and (select private.is_team_admin(team_id)))
    or (select private.is_super_admin())
  );

-- The hash stored for a token.
create or replace function private.invitation_token_hash(token text) returns bytea
language sql immutable
set search_path = ''
as $$ select pg_catalog.sha256(pg_catalog.convert_to(token, 'UTF8')) $$;

-- Whether user `who` may still invite for this group as the invitation says (checked again at
-- acceptance: an owner who handed the organization over, or a demoted team admin, no longer can).
create or replace function private.may_invite(who uuid, target_org uuid, target_team uuid, into_org boolean)
returns boolean
language sql stable security definer
set search_path = ''
as $$
  select exists (select 1 from public.profiles p where p.id = who and p.role = 'super_admin')
      or (case when target_team is null
               then exists (select 1 from public.organization_members m
                             where m.org_id = target_org and m.user_id = who and m.role = 'owner')
               else exists (select 1 from public.team_members m
                             where m.team_id = target_team and m.user_id = who and m.role = 'admin')
                    and (not into_org or exists (select 1 from public.organization_members m
                                                 where m.org_id = target_org and m.user_id = who and m.role = 'owner'))
          end)
$$;

-- Creates (or renews: the pending one to the same address and group is revoked) an invitation;
-- returns it with its token, the only time the token is seen.
create or replace function private.create_invitation(
  target_org uuid, target_team uuid, invitee_email text, invitee_role text, into_organization boolean
) returns table (id uuid, org_id uuid, team_id uuid, email text, role text, add_to_organization boolean,
                 status text, created_at timestamptz, expires_at timestamptz, token text)
language plpgsql security definer
set search_path = ''
as $$
declare
  uid uuid := (select auth.uid());
  address text := lower(private.required_text(invitee_email, 'email', 320));
  into_org boolean := coalesce(into_organization, false);
  group_org uuid := target_org;
  allowed integer;
  oldest_recent timestamptz;
  retry integer;
  recent integer;
  new_token text;
  made public.invitations;
begin
  if uid is null then
    raise exception 'sign in to invite' using errcode = '42501';
  end if;
  if address !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' then
    raise exception 'email: must be an e-mail address' using errcode = '22023';
  end if;
  perform private.check_required('role', invitee_role);
  perform private.check_one_of('role', invitee_role, array['admin', 'member']);

  if target_team is null then
    if into_org then
      raise exception 'add_to_organization: only for a team invitation' using errcode = '22023';
    end if;
    if not exists (select 1 from public.organizations o where o.id = target_org)
       or not (private.is_org_member(target_org) or private.is_super_admin()) then
      raise exception 'organization not found' using errcode = 'PT404';
    end if;
    if not private.may_invite(uid, target_org, null, false) then
      raise exception 'only the organization''s owner may invite people into it' using errcode = '42501';
    end if;
    if exists (select 1 from public.organization_members m join auth.users u on u.id = m.user_id
                where m.org_id = target_org and lower(u.email) = address) then
      raise exception 'email: this address is already a member of the organization' using errcode = 'PT409';
    end if;
  else
    group_org := private.team_org(target_team);
    if group_org is null or not (private.is_org_member(group_org) or private.is_super_admin()) then
      raise exception 'team not found' using errcode = 'PT404';
    end if;
    if not private.may_invite(uid, group_org, target_team, false) then
      raise exception 'only the team''s admins may invite people into it' using errcode = '42501';
    end if;
    if into_org and not private.may_invite(uid, group_org, target_team, true) then
      raise exception 'add_to_organization: only the organization''s owner may invite someone into the organization'
        using errcode = '42501';
    end if;
    if exists (select 1 from public.team_members m join auth.users u on u.id = m.user_id
                where m.team_id = target_team and lower(u.email) = address) then
      raise exception 'email: this address is already a member of the team' using errcode = 'PT409';
    end if;
  end if;

  -- The daily allowance, exact under concurrency: one inviter's invitations queue here.
  perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('invite:' || uid::text, 0));
  select l.max_per_day into allowed from private.invitation_limits l
   where l.subject in (uid::text, '*') order by l.subject = '*' limit 1;
  allowed := coalesce(allowed, 50);
  select count(*), min(i.created_at) into recent, oldest_recent from public.invitations i
   where i.invited_by = uid and i.created_at > now() - interval '24 hours';
  if recent >= allowed then
    retry := greatest(1, ceil(extract(epoch from (coalesce(oldest_recent, now()) + interval '24 hours' - now())))::integer);
    -- PostgREST answers 429 with Retry-After; details carries the seconds for /api.
    raise sqlstate 'PGRST' using
      message = json_build_object('code', 'PT429',
        'message', format('at most %s invitations per 24 hours; try again later', allowed),
        'details', format('retry_after_seconds=%s', retry))::text,
      detail = json_build_object('status', 429, 'headers', json_build_object('Retry-After', retry::text))::text;
  end if;

  update public.invitations i set status = 'revoked'
   where i.org_id = group_org and i.team_id is not distinct from target_team and i.email = address
     and i.status = 'pending';
  new_token := translate(encode(extensions.gen_random_bytes(32), 'base64'), '+/=', '-_');
  insert into public.invitations (org_id, team_id, email, role, add_to_organization, invited_by, token_hash)
  values (group_org, target_team, address, invitee_role, into_org, uid, private.invitation_token_hash(new_token))
  returning * into made;
  return query select made.id, made.org_id, made.team_id, made.email, made.role, made.add_to_organization,
                      made.status, made.created_at, made.expires_at, new_token;
end
$$;
comment on function private.create_invitation(uuid, uuid, text, text, boolean) is
  'Invites an address (owners: into the organization; team admins: into the team); returns the token once.';
grant execute on function private.create_invitation(uuid, uuid, text, text, boolean) to authenticated;

create or replace function public.create_organization_invitation(target_org uuid, email text, role text)
returns table (id uuid, org_id uuid, team_id uuid, email text, role text, add_to_organization boolean,
               status text, created_at timestamptz, expires_at timestamptz, token text)
language sql security invoker
set search_path = ''
as $$ select * from private.create_invitation(target_org, null, email, role, false) $$;
comment on function public.create_organization_invitation(uuid, text, text) is
  'Owners: invites an address into the organization; returns the link''s token once (deliver it to the invitee).';
grant execute on function public.create_organization_invitation(uuid, text, text) to authenticated;

create or replace function public.create_team_invitation(
  target_team uuid, email text, role text, add_to_organization boolean default false
) returns table (id uuid, org_id uuid, team_id uuid, email text, role text, add_to_organization boolean,
                 status text, created_at timestamptz, expires_at timestamptz, token text)
language sql security invoker
set search_path = ''
as $$ select * from private.create_invitation(null, target_team, email, role, add_to_organization) $$;
comment on function public.create_team_invitation(uuid, text, text, boolean) is
  'Team admins: invites an address into the team (add_to_organization: the organization''s owner only); returns the token once.';
grant execute on function public.create_team_invitation(uuid, text, text, boolean) to authenticated;

-- Pending invitations of an organization (team_id null) or of a team, with the inviter's name.
create or replace function private.list_pending_invitations(target_org uuid, target_team uuid)
returns table (id uuid, org_id uuid, team_id uuid, email text, role text, add_to_organization boolean,
               invited_by uuid, inviter_name text, created_at timestamptz, expires_at timestamptz)
language plpgsql stable security definer
set search_path = ''
as $$
declare
  group_org uuid := coalesce(target_org, private.team_org(target_team));
begin
  if group_org is null or not (private.is_org_member(group_org) or private.is_super_admin())
     or (target_org is null and not exists (select 1 from public.teams t where t.id = target_team)) then
    raise exception '% not found', case when target_team is null then 'organization' else 'team' end using errcode = 'PT404';
  end if;
  if not (private.is_org_owner(group_org) or private.is_super_admin()
          or (target_team is not null and private.is_team_admin(target_team))) then
    raise exception 'only the organization''s owner%s see its invitations',
      case when target_team is null then '' else ' and the team''s admin' end using errcode = '42501';
  end if;
  return query
    select i.id, i.org_id, i.team_id, i.email, i.role, i.add_to_organization, i.invited_by, p.full_name,
           i.created_at, i.expires_at
      from public.invitations i
      join public.profiles p on p.id = i.invited_by
     where i.org_id = group_org and i.team_id is not distinct from target_team
       and i.status = 'pending' and i.expires_at > now()
     order by i.created_at desc, i.id;
end
$$;
grant execute on function private.list_pending_invitations(uuid, uuid) to authenticated;

create or replace function public.list_organization_invitations(target_org uuid)
returns table (id uuid, org_id uuid, team_id uuid, email text, role text, add_to_organization boolean,
               invited_by uuid, inviter_name text, created_at timestamptz, expires_at timestamptz)
language sql stable security invoker
set search_path = ''
as $$ select * from private.list_pending_invitations(target_org, null) $$;
comment on function public.list_organization_invitations(uuid) is 'Owners: the organization''s pending invitations.';
grant execute on function public.list_organization_invitations(uuid) to authenticated;

create or replace function public.list_team_invitations(target_team uuid)
returns table (id uuid, org_id uuid, team_id uuid, email text, role text, add_to_organization boolean,
               invited_by uuid, inviter_name text, created_at timestamptz, expires_at timestamptz)
language sql stable security invoker
set search_path = ''
as $$ select * from private.list_pending_invitations(null, target_team) $$;
comment on function public.list_team_invitations(uuid) is 'Team admins and the organization''s owner: the team''s pending invitations.';
grant execute on function public.list_team_invitations(uuid) to authenticated;

-- Revokes a pending invitation: its inviter, the organization's owner, the team's admins.
create or replace function private.revoke_invitation(target_org uuid, target_team uuid, invitation_id uuid)
returns void
language plpgsql security definer
set search_path = ''
as $$
declare
  inv public.invitations;
begin
  select * into inv from public.invitations i
   where i.id = invitation_id and i.org_id = coalesce(target_org, private.team_org(target_team))
     and i.team_id is not distinct from target_team
   for update;
  if inv.id is null or not (private.is_org_member(inv.org_id) or private.is_super_admin()) then
    raise exception 'invitation not found' using errcode = 'PT404';
  end if;
  if not (inv.invited_by = (select auth.uid()) or private.is_org_owner(inv.org_id) or private.is_super_admin()
          or (inv.team_id is not null and private.is_team_admin(inv.team_id))) then
    raise exception 'only the inviter, the organization''s owner or the team''s admins may revoke an invitation'
      using errcode = '42501';
  end if;
  if inv.status <> 'pending' then
    raise exception 'the invitation was already %', inv.status using errcode = 'PT409';
  end if;
  update public.invitations set status = 'revoked', responded_at = now() where id = inv.id;
end
$$;
grant execute on function private.revoke_invitation(uuid, uuid, uuid) to authenticated;

create or replace function public.revoke_organization_invitation(target_org uuid, invitation_id uuid) returns void
language sql security invoker
set search_path = ''
as $$ select private.revoke_invitation(target_org, null, invitation_id) $$;
comment on function public.revoke_organization_invitation(uuid, uuid) is 'Revokes a pending invitation into the organization.';
grant execute on function public.revoke_organization_invitation(uuid, uuid) to authenticated;

create or replace function public.revoke_team_invitation(target_team uuid, invitation_id uuid) returns void
language sql security invoker
set search_path = ''
as $$ select private.revoke_invitation(null, target_team, invitation_id) $$;
comment on function public.revoke_team_invitation(uuid, uuid) is 'Revokes a pending invitation into the team.';
grant execute on function public.revoke_team_invitation(uuid, uuid) to authenticated;

-- The invitation a token names, still usable: PT404 for no such token, PT410 with a sentence a
-- person understands for one expired, revoked or used.
create or replace function private.usable_invitation(token text, lock boolean) returns public.invitations
language plpgsql security definer
set search_path = ''
as $$
declare
  inv public.invitations;
begin
  if token is null or token !~ '^[A-Za-z0-9_-]{43}$' then
    raise exception 'token: not an invitation link''s token' using errcode = '22023';
  end if;
  if lock then
    select * into inv from public.invitations i where i.token_hash = private.invitation_token_hash(token) for update;
  else
    select * into inv from public.invitations i where i.token_hash = private.invitation_token_hash(token);
  end if;
  if inv.id is null then
    raise exception 'This invitation link is not valid. Check that you copied the whole link.' using errcode = 'PT404';
  end if;
  if inv.status = 'accepted' then
    raise exception 'This invitation has already been used.' using errcode = 'PT410';
  elsif inv.status = 'declined' then
    raise exception 'This invitation was declined.' using errcode = 'PT410';
  elsif inv.status = 'revoked' then
    raise exception 'This invitation was withdrawn. Ask the person who invited you for a new one.' using errcode = 'PT410';
  elsif inv.expires_at <= now() then
    raise exception 'This invitation expired on %. Ask the person who invited you for a new one.',
      to_char(inv.expires_at at time zone 'UTC', 'FMMonth FMDD, YYYY') using errcode = 'PT410';
  end if;
  return inv;
end
$$;

-- What the e-mail said, for whoever holds the token (signed in or not): the group, the inviter's
-- name, the role, the invited address and the expiry. Nothing about whether the address has an
-- account.
create or replace function private.invitation_details(token text)
returns table (organization_name text, team_name text, inviter_name text, email text, role text,
               add_to_organization boolean, expires_at timestamptz)
language plpgsql stable security definer
set search_path = ''
as $$
declare
  inv public.invitations := private.usable_invitation(token, false);
begin
  return query
    select o.name, t.name, p.full_name, inv.email, inv.role, inv.add_to_organization, inv.expires_at
      from public.organizations o
      left join public.teams t on t.id = inv.team_id
      left join public.profiles p on p.id = inv.invited_by
     where o.id = inv.org_id;
end
$$;
grant execute on function private.invitation_details(text) to anon, authenticated;

create or replace function public.invitation_details(token text)
returns table (organization_name text, team_name text, inviter_name text, email text, role text,
               add_to_organization boolean, expires_at timestamptz)
language sql stable security invoker
set search_path = ''
as $$ select * from private.invitation_details(token) $$;
comment on function public.invitation_details(text) is
  'What an invitation link says (anyone holding its token); 410 once expired, revoked or used.';
grant execute on function public.invitation_details(text) to anon, authenticated;

-- Accepts or declines as the invitee: the signed-in user whose confirmed address is the invited
-- one. Accepting joins the group (and the organization first when the invitation says so) and
-- tells the inviter.
create or replace function private.respond_to_invitation(token text, accept boolean)
returns table (org_id uuid, team_id uuid, role text, status text)
language plpgsql security definer
set search_path = ''
as $$
declare
  uid uuid := (select auth.uid());
  inv public.invitations := private.usable_invitation(token, true);
  caller auth.users;
  org_name text;
  team_name text;
begin
  select * into caller from auth.users u where u.id = uid;
  if caller.id is null then
    raise exception 'sign in with the address the invitation was sent to' using errcode = '42501';
  end if;
  if lower(caller.email) is distinct from inv.email then
    raise exception 'This invitation was sent to another address; sign in with the address it was sent to.'
      using errcode = '42501';
  end if;
  if caller.email_confirmed_at is null then
    raise exception 'Confirm your e-mail address first (follow the link in the confirmation e-mail), then try again.'
      using errcode = '42501';
  end if;
  if not accept then
    update public.invitations i set status = 'declined', responded_by = uid, responded_at = now() where i.id = inv.id;
    return query select inv.org_id, inv.team_id, inv.role, 'declined'::text;
    return;
  end if;
  if not private.may_invite(inv.invited_by, inv.org_id, inv.team_id, inv.add_to_organization) then
    raise exception 'This invitation is no longer valid: the person who sent it may no longer invite. Ask for a new one.'
      using errcode = 'PT410';
  end if;
  select o.name into org_name from public.organizations o where o.id = inv.org_id;
  select t.name into team_name from public.teams t where t.id = inv.team_id;

  if inv.team_id is null then
    if exists (select 1 from public.organization_members m where m.org_id = inv.org_id and m.user_id = uid) then
      raise exception 'You are already a member of %.', org_name using errcode = 'PT409';
    end if;
  else
    if exists (select 1 from public.team_members m where m.team_id = inv.team_id and m.user_id = uid) then
      raise exception 'You are already a member of the team %.', team_name using errcode = 'PT409';
    end if;
    if not inv.add_to_organization
       and not exists (select 1 from public.organization_members m where m.org_id = inv.org_id and m.user_id = uid) then
      raise exception 'The team % belongs to the organization %, and you are not a member of it. Ask its owner to invite you to the organization first, then accept this invitation.',
        team_name, org_name using errcode = '42501';
    end if;
  end if;
  -- The memberships are made by the trigger below (a trigger's inserts are authorized ones for
  -- the membership guards).
  update public.invitations i set status = 'accepted', responded_by = uid, responded_at = now() where i.id = inv.id;
  perform private.notify(inv.invited_by, 'invitation.accepted', jsonb_build_object(
    'invitation_id', inv.id, 'organization_id', inv.org_id, 'organization_name', org_name,
    'team_id', inv.team_id, 'team_name', team_name, 'role', inv.role, 'by', uid));
  return query select inv.org_id, inv.team_id, inv.role, 'accepted'::text;
end
$$;
grant execute on function private.respond_to_invitation(text, boolean) to authenticated;

-- An accepted invitation makes the memberships it names: the organization's (an organization
-- invitation, or a team's with add_to_organization for someone not yet a member), then the team's.
create or replace function private.join_on_invitation_accepted() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  if new.team_id is null then
    insert into public.organization_members (org_id, user_id, role) values (new.org_id, new.responded_by, new.role);
  else
    if new.add_to_organization then
      insert into public.organization_members (org_id, user_id, role) values (new.org_id, new.responded_by, 'member')
      on conflict (org_id, user_id) do nothing;
    end if;
    insert into public.team_members (team_id, user_id, role) values (new.team_id, new.responded_by, new.role);
  end if;
  return null;
end
$$;
create trigger invitations_join_on_accept after update of status on public.invitations
  for each row when (old.status = 'pending' and new.status = 'accepted')
  execute function private.join_on_invitation_accepted();

create or replace function public.accept_invitation(token text)
returns table (org_id uuid, team_id uuid, role text, status text)
language sql security invoker
set search_path = ''
as $$ select * from private.respond_to_invitation(token, true) $$;
comment on function public.accept_invitation(text) is
  'The invitee (signed in with the invited, confirmed address) joins the organization or team.';
grant execute on function public.accept_invitation(text) to authenticated;

create or replace function public.decline_invitation(token text)
returns table (org_id uuid, team_id uuid, role text, status text)
language sql security invoker
set search_path = ''
as $$ select * from private.respond_to_invitation(token, false) $$;
comment on function public.decline_invitation(text) is
  'The invitee (signed in with the invited, confirmed address) declines; the link is used up.';
grant execute on function public.decline_invitation(text) to authenticated;
