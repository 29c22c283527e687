-- =============================================================================================
-- Admin: health page, role changes, user list
-- =============================================================================================
-- What the admin pages need from the database: the migrations applied and the pg_cron jobs
-- (health), super admin role changes (audited, the last one never demoted), the user list.

-- ---------------------------------------------------------------------------------------------
-- Health
-- ---------------------------------------------------------------------------------------------

-- The migrations recorded as applied (super admins).
create or replace function public.applied_migrations()
returns table (version text, name text)
language sql stable security invoker
set search_path = ''
as $$ select * from private.applied_migrations() $$;
comment on function public.applied_migrations() is 'Super admins: migrations recorded as applied (for the health page).';
grant execute on function applied_migrations() to authenticated, service_role;

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

-- ---------------------------------------------------------------------------------------------
-- Role changes
-- ---------------------------------------------------------------------------------------------

-- Role changes are audited, and the last super admin cannot be demoted, by any path (the API,
-- PostgREST PATCH, the SQL dashboard).
create table public.role_changes (
  id bigint generated always as identity primary key,
  user_id uuid not null,
  old_role text not null,
  new_role text not null,
  changed_by uuid,
  changed_via text not null,
  created_at timestamptz not null default now()
);
alter table public.role_changes enable row level security;
comment on table public.role_changes is
  'Audit of profile role changes: whose (user_id), from and to, by whom (null: a database session) and through which role. Written only by a trigger on profiles; kept after either user is deleted.';
revoke all on public.role_changes from anon, authenticated, service_role;
grant select on public.role_changes to authenticated, service_role;

create policy "role_changes: super admins read" on public.role_changes
  for select to authenticated using ((select private.is_super_admin()));

-- Before a role change on profiles: refuses to demote the last super admin (serialized, so two
-- demotions cannot both pass); an admin whose account is being deleted does not count.
create or replace function private.guard_last_super_admin() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  if old.role = 'super_admin' and new.role is distinct from 'super_admin' then
    -- One demotion at a time, so two admins demoting each other cannot both succeed; the
    -- check below then reads what the other transaction committed.
    perform pg_advisory_xact_lock(hashtext('public.profiles super_admin demotion'));
    if not exists (select 1 from public.profiles p where p.role = 'super_admin' and p.id <> new.id
                     and not exists (select 1 from private.account_deletions d where d.user_id = p.id)) then
      raise exception 'the last super admin cannot be demoted' using errcode = 'PT409';
    end if;
  end if;
  return new;
end
$$;

create trigger profiles_guard_last_super_admin before update of role on public.profiles
  for each row execute function private.guard_last_super_admin();

-- After a role change on profiles: records who changed whose role, from what to what, in
-- role_changes.
create or replace function private.audit_role_change() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  insert into public.role_changes (user_id, old_role, new_role, changed_by, changed_via)
  values (new.id, old.role, new.role, (select auth.uid()), coalesce(private.request_role(), 'database'));
  return null;
end
$$;

create trigger profiles_audit_role_change after update of role on public.profiles
  for each row when (old.role is distinct from new.role)
  execute function private.audit_role_change();

-- PUT /api/admin/users/:id/role. Runs as the caller: grants, RLS and the triggers above apply.
create or replace function public.set_user_role(user_id uuid, role text) returns jsonb
language plpgsql
set search_path = ''
as $$
declare
  previous text;
begin
  if not private.is_trusted_caller() then
    raise exception 'only super admins may change roles' using errcode = '42501';
  end if;
  if set_user_role.role is null or set_user_role.role not in ('user', 'super_admin') then
    raise exception 'role: must be one of user, super_admin' using errcode = '22023';
  end if;
  select p.role into previous from public.profiles p where p.id = set_user_role.user_id for update;
  if not found then
    raise exception 'user not found' using errcode = 'PT404';
  end if;
  if previous is distinct from set_user_role.role then
    update public.profiles p set role = set_user_role.role where p.id = set_user_role.user_id;
  end if;
  return jsonb_build_object('id', set_user_role.user_id, 'role', set_user_role.role,
                            'previous_role', previous, 'changed', previous is distinct from set_user_role.role);
end
$$;
comment on function public.set_user_role(uuid, text) is
  'Super admins: change a user''s role (user, super_admin); audited in role_changes; the last super admin cannot be demoted (409).';
grant execute on function set_user_role(uuid,text) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Searching users by e-mail or name
-- ---------------------------------------------------------------------------------------------
-- E-mails live in auth.users, which belongs to the platform (a project may not index it), so
-- the search reads a copy of each user's e-mail and name kept by triggers on auth.users and
-- profiles, with trigram indexes (pg_trgm): a search for part of an address or name reads the
-- indexes, not every user (docs/performance.md). The copy keeps the name's index off profiles,
-- whose rows every balance change rewrites.

create extension if not exists pg_trgm with schema extensions;

create table private.user_search (
  user_id uuid primary key references auth.users (id) on delete cascade,
  email text,
  full_name text
);
comment on table private.user_search is
  'A copy of each user''s e-mail (auth.users) and name (profiles) for the admin user search (trigram indexes); kept by triggers.';
create index user_search_email_trgm on private.user_search using gin (email extensions.gin_trgm_ops);
create index user_search_name_trgm on private.user_search using gin (full_name extensions.gin_trgm_ops);
-- A search for an address or its start ("sam@ex"): a range of this index, however many users
-- share the address's trigrams (byte order, so the range's end is the start plus U+10FFFF).
create index user_search_email_start on private.user_search ((lower(email) collate "C"));

create or replace function private.copy_user_search_email() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  insert into private.user_search (user_id, email) values (new.id, new.email)
  on conflict (user_id) do update set email = excluded.email;
  return null;
end
$$;
comment on function private.copy_user_search_email() is 'Keeps private.user_search.email equal to auth.users.email.';
create trigger copy_user_search_email
  after insert or update of email on auth.users
  for each row execute function private.copy_user_search_email();

create or replace function private.copy_user_search_name() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  insert into private.user_search (user_id, full_name) values (new.id, new.full_name)
  on conflict (user_id) do update set full_name = excluded.full_name;
  return null;
end
$$;
comment on function private.copy_user_search_name() is 'Keeps private.user_search.full_name equal to profiles.full_name.';
create trigger copy_user_search_name
  after insert or update of full_name on public.profiles
  for each row execute function private.copy_user_search_name();

-- Super admins: users newest first with e-mail, role, flags, drops balance and this month's AI
-- usage (keyset pages; search on e-mail or name).
create or replace function private.admin_list_users(
  search text, before_created_at timestamptz, before_id uuid, page_size integer
) returns table (
  id uuid, email text, full_name text, role text, is_ai boolean, is_active boolean,
  drops_balance integer, created_at timestamptz, token_usage jsonb
)
language plpgsql stable security definer
set search_path = ''
as $$
declare
  -- The text searched for, with LIKE's wildcards taken literally; null: no search.
  pattern text := '%' || replace(replace(replace(nullif(btrim(search), ''), '\', '\\'), '%', '\%'), '_', '\_') || '%';
  -- A term with an @ after its first character is an address or its start: matched from the
  -- address's beginning (an index range), not anywhere in it.
  email_start text := case when position('@' in btrim(search)) > 1 then lower(btrim(search)) end;
  this_month date := date_trunc('month', now() at time zone 'UTC')::date;
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins only' using errcode = '42501';
  end if;
  if page_size is null or page_size not between 1 and 101 then
    raise exception 'page_size: must be between 1 and 101' using errcode = '22023';
  end if;
  -- The cursor is always a row comparison (never "or null"), so it stays an index condition
  -- on profiles_newest in a cached generic plan: every page starts where the last one ended.
  if pattern is null then
    return query
      select p.id, u.email::text, p.full_name, p.role, p.is_ai, p.is_active, p.drops_balance, p.created_at,
             private.usage_summary(p.id, this_month)
        from public.profiles p
        join auth.users u on u.id = p.id
       where (p.created_at, p.id) < (coalesce(before_created_at, 'infinity'::timestamptz),
                                     coalesce(before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid))
       order by p.created_at desc, p.id desc
       limit page_size;
  else
    -- A search reads its matches from an index once (the start of an address: a range of
    -- user_search_email_start; any other term: the two trigram indexes, e-mail and name), then
    -- orders just those; filtering the newest-first walk row by row across the join is slower
    -- whenever matches are rare. Only one branch runs (a one-time filter on email_start).
    return query
      select p.id, u.email::text, p.full_name, p.role, p.is_ai, p.is_active, p.drops_balance, p.created_at,
             private.usage_summary(p.id, this_month)
        from public.profiles p
        join auth.users u on u.id = p.id
       where p.id in (select m.user_id from private.user_search m
                       where email_start is not null
                         and (lower(m.email) collate "C") >= (email_start collate "C")
                         and (lower(m.email) collate "C") < ((email_start || chr(1114111)) collate "C")
                         and starts_with(lower(m.email), email_start)
                      union all
                      select m.user_id from private.user_search m
                       where email_start is null and (m.email ilike pattern or m.full_name ilike pattern))
         and (p.created_at, p.id) < (coalesce(before_created_at, 'infinity'::timestamptz),
                                     coalesce(before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid))
       order by p.created_at desc, p.id desc
       limit page_size;
  end if;
end
$$;
grant execute on function private.admin_list_users(text,timestamp with time zone,uuid,integer) to authenticated, service_role;

create or replace function public.admin_list_users(
  search text default null, before_created_at timestamptz default null, before_id uuid default null,
  page_size integer default 50
) returns table (
  id uuid, email text, full_name text, role text, is_ai boolean, is_active boolean,
  drops_balance integer, created_at timestamptz, token_usage jsonb
)
language sql stable
set search_path = ''
as $$ select * from private.admin_list_users($1, $2, $3, $4) $$;
comment on function public.admin_list_users(text, timestamptz, uuid, integer) is
  'Super admins: users newest first with e-mail, role, flags, drops balance and this month''s AI usage; search matches part of the e-mail or name, or (a term with an @ after its first character) the start of an address.';
grant execute on function admin_list_users(text,timestamp with time zone,uuid,integer) to authenticated, service_role;

-- Super admins: one user as admin_list_users shows them (the console's user page).
create or replace function private.admin_get_user(target_user_id uuid)
returns table (
  id uuid, email text, full_name text, role text, is_ai boolean, is_active boolean,
  drops_balance integer, created_at timestamptz, token_usage jsonb
)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins only' using errcode = '42501';
  end if;
  return query
    select p.id, u.email::text, p.full_name, p.role, p.is_ai, p.is_active, p.drops_balance, p.created_at,
           private.usage_summary(p.id, date_trunc('month', now() at time zone 'UTC')::date)
      from public.profiles p
      join auth.users u on u.id = p.id
     where p.id = target_user_id;
end
$$;
grant execute on function private.admin_get_user(uuid) to authenticated, service_role;

create or replace function public.admin_get_user(target_user_id uuid)
returns table (
  id uuid, email text, full_name text, role text, is_ai boolean, is_active boolean,
  drops_balance integer, created_at timestamptz, token_usage jsonb
)
language sql stable
set search_path = ''
as $$ select * from private.admin_get_user($1) $$;
comment on function public.admin_get_user(uuid) is
  'Super admins: one user with e-mail, role, flags, drops balance and this month''s AI usage (as admin_list_users); no row when there is no such user.';
grant execute on function admin_get_user(uuid) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- pg_cron jobs for the admin health page
-- ---------------------------------------------------------------------------------------------

-- Super admins: each pg_cron job with its schedule and its last run (status, times, message),
-- for the health page.
create or replace function private.cron_job_status()
returns table (job_name text, schedule text, active boolean, last_status text, last_started_at timestamptz,
               last_finished_at timestamptz, last_message text)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('read the cron job status');
  return query
    select j.jobname::text, j.schedule::text, j.active, d.status::text, d.start_time, d.end_time, left(d.return_message, 500)
      from cron.job j
      left join lateral (select r.status, r.start_time, r.end_time, r.return_message
                           from cron.job_run_details r where r.jobid = j.jobid
                          order by r.start_time desc nulls last limit 1) d on true
     order by j.jobname;
end
$$;
grant execute on function private.cron_job_status() to authenticated, service_role;

create or replace function public.cron_job_status()
returns table (job_name text, schedule text, active boolean, last_status text, last_started_at timestamptz,
               last_finished_at timestamptz, last_message text)
language sql stable security invoker
set search_path = ''
as $$ select * from private.cron_job_status() $$;
grant execute on function cron_job_status() to authenticated, service_role;

