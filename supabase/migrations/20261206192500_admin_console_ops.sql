-- The admin console's health and tasks pages (issue 37): work queues and job runs for health,
-- every pg_cron job with its runs and the admin work waiting, and an audited "run now".
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
  run_by uuid,
  run_via text not null,
  started_at timestamptz not null default clock_timestamp(),
  finished_at timestamptz,
  status text not null check (status in ('succeeded', 'failed')),
  message text check (char_length(message) <= 1000)
);
comment on table private.cron_manual_runs is
  'Audit of "run now": which pg_cron job (its command as stored in cron.job, which names Vault secrets, never their values), who (run_by: the super admin; null: the service role or a database session), through which role, when, and the outcome.';
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
  select j.jobid, j.jobname, j.command, j.username into job from cron.job j where j.jobname = run_cron_job.job_name;
  if not found then
    raise exception 'no scheduled job named %', coalesce(run_cron_job.job_name, 'null') using errcode = 'PT404';
  end if;
  if not pg_try_advisory_xact_lock(hashtext('private.run_cron_job'), hashtext(job.jobname)) then
    raise exception 'the job % is already being run now; try again when it finishes', job.jobname using errcode = 'PT409';
  end if;
  perform set_config('request.jwt.claims', '', true);
  perform set_config('request.jwt.claim.sub', '', true);
  begin
    execute job.command;
    msg := 'run now';
  exception when others then
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

notify pgrst, 'reload schema';
