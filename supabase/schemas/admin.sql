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


-- ---------------------------------------------------------------------------------------------
-- Operations: work queues, job runs, "run now" (the health and tasks pages)
-- ---------------------------------------------------------------------------------------------
-- What an operator looks at after the status: how deep each work queue is (and how old its
-- oldest item), each job's recent runs (private.job_runs, SPEC Events 4; cron.job_run_details),
-- and the admin work waiting. "Run now" runs one job's own pg_cron command, looked up by name
-- in cron.job: never SQL from the caller.

-- Super admins: the depth of each work queue with its oldest item, and each pg_cron job's last
-- private.job_runs rows (newest first) with the day's totals. One read for the health page.
create or replace function private.admin_ops_status(runs_per_job integer) returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  window_length interval;
  queues jsonb;
  jobs jsonb;
begin
  perform private.require_trusted_caller('read the work queues and job runs');
  if runs_per_job is null or runs_per_job not between 1 and 20 then
    raise exception 'runs_per_job: must be between 1 and 20' using errcode = '22023';
  end if;
  select make_interval(hours => c.engagement_window_hours) into window_length from public.encouragement_config c;
  window_length := coalesce(window_length, interval '24 hours');
  -- Counts stop at 100,000 (a deeper queue reads as 100,000): the page needs the order of magnitude.
  queues := jsonb_build_array(
    (select jsonb_build_object(
       'name', 'notification_outbox', 'label', 'Notification outbox (push deliveries)',
       'depth', (select count(*) from (select 1 from private.notification_deliveries d
                                         where d.status = 'pending' limit 100000) x),
       'due', (select count(*) from (select 1 from private.notification_deliveries d
                                       where d.status = 'pending' and d.deliver_after <= now() limit 100000) x),
       'oldest_at', (select min(d.deliver_after) from private.notification_deliveries d
                      where d.status = 'pending' and d.deliver_after <= now()),
       'failing', null,
       'note', 'pending deliveries; due: their moment has come')),
    (select jsonb_build_object(
       'name', 'engagement', 'label', 'Engagement queue (drops to judge)',
       'depth', (select count(*) from (select 1 from private.encouragement_unjudged_drops q limit 100000) x),
       'due', (select count(*) from (select 1 from private.encouragement_unjudged_drops q
                                       where q.date_sent <= now() - window_length limit 100000) x),
       'oldest_at', (select min(q.date_sent) from private.encouragement_unjudged_drops q),
       'failing', null,
       'note', 'unjudged drops; due: their engagement window has closed')),
    (select jsonb_build_object(
       'name', 'account_deletions', 'label', 'Account deletions in progress',
       'depth', count(*), 'due', count(*) filter (where d.next_attempt_at <= now()),
       'oldest_at', min(d.requested_at), 'failing', count(*) filter (where d.last_error is not null),
       'note', 'failing: the last attempt left an error (retried with backoff)')
       from private.account_deletions d),
    (select jsonb_build_object(
       'name', 'ai_jobs', 'label', 'AI job queue (today''s users)',
       'depth', count(*), 'due', count(*) filter (where q.status = 'pending'),
       'oldest_at', min(q.queued_at), 'failing', null,
       'note', 'pending or running users of analyze-notes and generate-daily-drops, today (UTC)')
       from private.ai_job_queue q
      where q.day = private.utc_today() and q.status in ('pending', 'running')),
    jsonb_build_object(
       'name', 'tone_analysis', 'label', 'Tone analysis', 'depth', null, 'due', null, 'oldest_at', null,
       'failing', null, 'note', 'not queued: an entry is analysed when it is saved'));
  select coalesce(jsonb_agg(jsonb_build_object(
           'job', j.jobname, 'runs', coalesce(r.runs, '[]'::jsonb),
           'runs_24h', coalesce(t.runs, 0), 'succeeded_24h', coalesce(t.succeeded, 0),
           'failed_24h', coalesce(t.failed, 0)) order by j.jobname), '[]'::jsonb)
    into jobs
    from cron.job j
    left join lateral (
      select jsonb_agg(jsonb_build_object('started_at', x.started_at, 'finished_at', x.finished_at,
                                          'succeeded', x.succeeded, 'failed', x.failed,
                                          'remaining', x.remaining, 'details', x.details)
                       order by x.started_at desc) as runs
        from (select * from private.job_runs jr where jr.job = j.jobname
               order by jr.started_at desc limit runs_per_job) x) r on true
    left join lateral (
      select count(*) as runs, sum(jr.succeeded) as succeeded, sum(jr.failed) as failed
        from private.job_runs jr where jr.job = j.jobname and jr.started_at > now() - interval '24 hours') t on true;
  return jsonb_build_object('queues', queues, 'jobs', jobs);
end
$$;
comment on function private.admin_ops_status(integer) is
  'Super admins: each work queue''s depth, due items and oldest item; each pg_cron job''s last job_runs and 24-hour totals.';
grant execute on function private.admin_ops_status(integer) to authenticated, service_role;

create or replace function public.admin_ops_status(runs_per_job integer default 5) returns jsonb
language sql stable security invoker
set search_path = ''
as $$ select private.admin_ops_status(runs_per_job) $$;
comment on function public.admin_ops_status(integer) is
  'Super admins: work queues and job runs for the health page.';
grant execute on function public.admin_ops_status(integer) to authenticated, service_role;

-- Super admins: every pg_cron job with its command, its last cron runs (cron.job_run_details)
-- and its last private.job_runs, and the admin work waiting. The tasks page's one read.
create or replace function private.admin_cron_jobs(runs_per_job integer) returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  jobs jsonb;
  waiting jsonb;
begin
  perform private.require_trusted_caller('read the scheduled jobs');
  if runs_per_job is null or runs_per_job not between 1 and 20 then
    raise exception 'runs_per_job: must be between 1 and 20' using errcode = '22023';
  end if;
  -- cron.job_run_details has no index but its key: one pass over the last week's rows.
  with recent as (
    select d.jobid, d.runid, d.status, d.start_time, d.end_time, left(d.return_message, 500) as message,
           row_number() over (partition by d.jobid order by d.start_time desc nulls last, d.runid desc) as n
      from cron.job_run_details d
     where d.start_time > now() - interval '7 days' or d.start_time is null
  )
  select coalesce(jsonb_agg(jsonb_build_object(
           'name', j.jobname, 'schedule', j.schedule, 'active', j.active, 'command', j.command,
           'cron_runs', coalesce(c.runs, '[]'::jsonb), 'job_runs', coalesce(r.runs, '[]'::jsonb),
           'manual_runs', coalesce(m.runs, '[]'::jsonb)) order by j.jobname), '[]'::jsonb)
    into jobs
    from cron.job j
    left join lateral (
      select jsonb_agg(jsonb_build_object('run_id', x.runid, 'status', x.status, 'started_at', x.start_time,
                                          'finished_at', x.end_time, 'message', x.message)
                       order by x.n) as runs
        from recent x where x.jobid = j.jobid and x.n <= runs_per_job) c on true
    left join lateral (
      select jsonb_agg(jsonb_build_object('id', x.id, 'started_at', x.started_at, 'finished_at', x.finished_at,
                                          'succeeded', x.succeeded, 'failed', x.failed,
                                          'remaining', x.remaining, 'details', x.details)
                       order by x.started_at desc, x.id desc) as runs
        from (select * from private.job_runs jr where jr.job = j.jobname
               order by jr.started_at desc limit runs_per_job) x) r on true
    left join lateral (
      select jsonb_agg(jsonb_build_object('id', x.id, 'started_at', x.started_at, 'status', x.status)
                       order by x.id desc) as runs
        from (select * from private.cron_manual_runs mr where mr.job_name = j.jobname
               order by mr.id desc limit 3) x) m on true;
  waiting := jsonb_build_object(
    'pending_sponsors', (select count(*) from public.labs_sponsors s where s.status = 'pending'),
    'pending_opportunities', (select count(*) from public.labs_opportunities o where o.status = 'pending'),
    'pending_videos', (select count(*) from public.labs_dream_videos v where v.status = 'pending'),
    'checkins_to_review', (select count(*) from public.workout_checkins k where k.status = 'pending'),
    'account_deletions', (select count(*) from private.account_deletions d));
  return jsonb_build_object('jobs', jobs, 'waiting', waiting);
end
$$;
comment on function private.admin_cron_jobs(integer) is
  'Super admins: each pg_cron job (schedule, command, last cron runs, last job_runs, last manual runs) and the admin work waiting.';
grant execute on function private.admin_cron_jobs(integer) to authenticated, service_role;

create or replace function public.admin_cron_jobs(runs_per_job integer default 5) returns jsonb
language sql stable security invoker
set search_path = ''
as $$ select private.admin_cron_jobs(runs_per_job) $$;
comment on function public.admin_cron_jobs(integer) is
  'Super admins: the scheduled jobs and the admin work waiting, for the tasks page.';
grant execute on function public.admin_cron_jobs(integer) to authenticated, service_role;

-- Who ran which job by hand, when, and how it went: kept (no personal data but the admin's id).
create table private.cron_manual_runs (
  id bigint generated always as identity primary key,
  job_name text not null,
  jobid bigint not null,
  command text not null,
  run_by uuid references public.profiles (id) on delete set null,
  run_via text not null,
  started_at timestamptz not null default clock_timestamp(),
  finished_at timestamptz,
  status text not null check (status in ('succeeded', 'failed')),
  message text check (char_length(message) <= 1000)
);
comment on table private.cron_manual_runs is
  'Audit of "run now": which pg_cron job (its command as stored in cron.job, which names Vault secrets, never their values), who (run_by: the super admin; null: the service role or a database session), through which role, when, and the outcome.';
create index cron_manual_runs_run_by on private.cron_manual_runs (run_by); -- the account deletion's set null
create index cron_manual_runs_by_job on private.cron_manual_runs (job_name, id desc);

-- Runs one pg_cron job's own command now, as pg_cron would: the command stored in cron.job
-- under that name (never SQL from the caller), as the function's owner, outside the API
-- request's identity (the claims are cleared while it runs, so the job's own checks see a
-- scheduler session, as under pg_cron). Audited in private.cron_manual_runs and recorded in
-- cron.job_run_details like a scheduled run. An edge-function job's command queues its usual
-- net.http_post to its own endpoint with its Vault secret. Two "run now" of one job at once:
-- the second is refused (409) while the first runs; jobs are safe side by side with their
-- scheduled runs anyway (their claims skip locked rows).
create or replace function private.run_cron_job(job_name text) returns jsonb
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  job record;
  caller uuid := (select auth.uid());
  via text := coalesce(private.request_role(), 'database');
  claims text := current_setting('request.jwt.claims', true);
  claim_sub text := current_setting('request.jwt.claim.sub', true);
  started timestamptz := clock_timestamp();
  outcome text := 'succeeded';
  msg text;
  audit_id bigint;
  run_id bigint;
begin
  perform private.require_trusted_caller('run scheduled jobs');
  -- Only the project's own jobs (scheduled by postgres, as every migration's are), which run as
  -- this function's owner does.
  select j.jobid, j.jobname, j.command, j.username, j.active into job
    from cron.job j where j.jobname = run_cron_job.job_name and j.username = 'postgres';
  if not found then
    raise exception 'no scheduled job named %', coalesce(run_cron_job.job_name, 'null') using errcode = 'PT404';
  end if;
  if not job.active then
    raise exception 'the job % is switched off (cron.job.active); switch it on to run it', job.jobname
      using errcode = 'PT409';
  end if;
  if not pg_try_advisory_xact_lock(hashtext('private.run_cron_job'), hashtext(job.jobname)) then
    raise exception 'the job % is already being run now; try again when it finishes', job.jobname using errcode = 'PT409';
  end if;
  perform set_config('request.jwt.claims', '', true);
  perform set_config('request.jwt.claim.sub', '', true);
  begin
    execute job.command;
    msg := 'run now';
  -- query_canceled too (a statement timeout inside a long job): the audit below is still written.
  exception when query_canceled or others then
    outcome := 'failed';
    msg := left(sqlerrm, 900);
  end;
  perform set_config('request.jwt.claims', coalesce(claims, ''), true);
  perform set_config('request.jwt.claim.sub', coalesce(claim_sub, ''), true);
  insert into private.cron_manual_runs (job_name, jobid, command, run_by, run_via, started_at, finished_at, status, message)
  values (job.jobname, job.jobid, job.command, caller, via, started, clock_timestamp(), outcome, msg)
  returning id into audit_id;
  insert into cron.job_run_details (jobid, job_pid, database, username, command, status, return_message, start_time, end_time)
  values (job.jobid, pg_backend_pid(), current_database(), job.username, job.command, outcome,
          left(format('run now (audit %s)%s', audit_id, case when outcome = 'failed' then ': ' || msg else '' end), 1000),
          started, clock_timestamp())
  returning runid into run_id;
  return jsonb_build_object('job', job.jobname, 'audit_id', audit_id, 'run_id', run_id, 'status', outcome,
                            'message', msg, 'started_at', started, 'finished_at', clock_timestamp(),
                            'command', job.command);
end
$$;
comment on function private.run_cron_job(text) is
  'Super admins: runs the named pg_cron job''s stored command now (as its scheduled run would); audited in private.cron_manual_runs; 404 unknown name, 409 already running. Answers the run and the command (for the API to describe; it names Vault secrets, never their values).';
grant execute on function private.run_cron_job(text) to authenticated, service_role;

create or replace function public.run_cron_job(job_name text) returns jsonb
language sql volatile security invoker
set search_path = ''
as $$ select private.run_cron_job(job_name) $$;
comment on function public.run_cron_job(text) is
  'Super admins: run one scheduled job now (its own pg_cron command, looked up by name); audited.';
grant execute on function public.run_cron_job(text) to authenticated, service_role;
