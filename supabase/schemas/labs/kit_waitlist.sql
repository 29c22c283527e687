-- =============================================================================================
-- Labs: kit waitlist
-- =============================================================================================
-- routes/labs/kit_waitlist.ts. The area's overview: labs/shared.sql.

-- ---------------------------------------------------------------------------------------------
-- Kit waitlist
-- ---------------------------------------------------------------------------------------------

create table public.labs_kit_waitlist (
  id uuid primary key default gen_random_uuid(),
  email text not null unique check (char_length(email) <= 320 and email = lower(email) and email ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$'),
  user_id uuid references public.profiles (id) on delete set null,
  created_at timestamptz not null default now()
);
alter table public.labs_kit_waitlist enable row level security;
comment on table public.labs_kit_waitlist is
  'Kit waitlist signups (one per address). Anyone may add one (an insert reports no row either way: see '
  'private.labs_kit_waitlist_signup); only super admins read the list.';
revoke all on public.labs_kit_waitlist from anon, authenticated, service_role;
grant select on public.labs_kit_waitlist to authenticated, service_role;
grant insert (email, user_id)
  on public.labs_kit_waitlist to anon;
grant insert (email, user_id)
  on public.labs_kit_waitlist to authenticated;

create index labs_kit_waitlist_user on public.labs_kit_waitlist (user_id);

create index labs_kit_waitlist_created on public.labs_kit_waitlist (created_at desc, id desc);

create policy "labs_kit_waitlist: anyone signs up (anonymously)" on public.labs_kit_waitlist
  for insert to anon with check (user_id is null);

create policy "labs_kit_waitlist: signed-in users sign up as themselves" on public.labs_kit_waitlist
  for insert to authenticated with check (user_id is null or user_id = (select auth.uid()));

create policy "labs_kit_waitlist: super admins read" on public.labs_kit_waitlist
  for select to authenticated using ((select private.is_super_admin()));

-- Signing up is an insert as the caller (anonymous or signed in) under the policies above,
-- ON CONFLICT DO NOTHING: an address already on the list changes nothing, and the answer does
-- not say which (no probing who signed up).

-- The gate (SPEC Other admin rules 2): more than 200 signups within 30 days of launch.
create or replace function private.labs_kit_waitlist_gate(launch_date date)
returns table (total integer, within_launch_window integer, gate_met boolean)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('read the kit waitlist');
  return query
    select count(*)::integer,
           case when launch_date is null then null else
             (count(*) filter (where w.created_at >= launch_date::timestamp at time zone 'utc'
                                 and w.created_at < (launch_date + 30)::timestamp at time zone 'utc'))::integer end,
           case when launch_date is null then null else
             count(*) filter (where w.created_at >= launch_date::timestamp at time zone 'utc'
                                and w.created_at < (launch_date + 30)::timestamp at time zone 'utc') > 200 end
      from public.labs_kit_waitlist w;
end
$$;
grant execute on function private.labs_kit_waitlist_gate(date) to authenticated, service_role;

create or replace function public.labs_kit_waitlist_gate(launch_date date)
returns table (total integer, within_launch_window integer, gate_met boolean)
language sql stable security invoker
set search_path = ''
as $$ select * from private.labs_kit_waitlist_gate(launch_date) $$;
grant execute on function labs_kit_waitlist_gate(date) to authenticated, service_role;

-- Before each insert, whoever writes it (PostgREST as anon or a user, /api, SQL): the checks
-- that could fail run first and fail alike for a new and a listed address (the address is
-- normalised, a user may only name themselves); then the trigger writes the row itself with
-- ON CONFLICT DO NOTHING and skips the statement's own row. So every sign-up answers alike:
-- no 409 from the unique index, and no row count (Prefer: count=exact) that differs. Two
-- sign-ups of one new address at once: one row, both succeed.
create or replace function private.labs_kit_waitlist_signup() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  caller_role text := private.request_role();
begin
  if current_setting('labs.kit_waitlist_signup', true) = 'on' then
    return new; -- the trigger's own insert below
  end if;
  new.email := private.valid_email(new.email, 'email');
  if caller_role in ('anon', 'authenticated') and new.user_id is not null and new.user_id is distinct from (select auth.uid()) then
    raise exception 'user_id: only your own (or none)' using errcode = '42501';
  end if;
  perform set_config('labs.kit_waitlist_signup', 'on', true);
  insert into public.labs_kit_waitlist (id, email, user_id, created_at)
  values (new.id, new.email, new.user_id, new.created_at)
  on conflict (email) do nothing;
  perform set_config('labs.kit_waitlist_signup', 'off', true);
  return null;
end
$$;
comment on function private.labs_kit_waitlist_signup() is
  'BEFORE INSERT on labs_kit_waitlist: validates, then inserts the row itself unless the address is listed, and skips '
  'the statement''s row, so a listed address cannot be told from a new one (no probing who signed up).';

create trigger labs_kit_waitlist_signup before insert on public.labs_kit_waitlist
  for each row execute function private.labs_kit_waitlist_signup();
