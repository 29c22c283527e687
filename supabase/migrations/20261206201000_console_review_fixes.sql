-- After an attacker's review of the admin console (issue 37):
-- * an impersonation session ends when its target is made a super admin (its token never
--   carries admin powers);
-- * a super admin's write is never refused by the write budget, and a default budget below 10
--   is refused (one console change could otherwise stop every write, its own undoing included);
--   an address subject is one address (no range, no IPv4-mapped IPv6);
-- * "run now" runs only postgres's own, active jobs, and audits a run cut by a statement timeout.

create or replace function private.impersonation_session_ended(session uuid) returns boolean
language sql stable security definer
set search_path = ''
as $$
  select not exists (select 1 from public.impersonation_audit a
                       join public.profiles admin on admin.id = a.admin_id and admin.role = 'super_admin' and admin.is_active
                       -- A target promoted meanwhile ends it: the token must never carry admin powers.
                       join public.profiles target on target.id = a.target_id and target.is_active
                                                  and target.role <> 'super_admin'
                      where a.session_id = session and a.event = 'start' and a.expires_at > now())
      or exists (select 1 from public.impersonation_audit a where a.session_id = session and a.event = 'stop')
$$;

create or replace function private.take_write(subject_kind text, subject text)
returns table (retry_after_seconds integer, message text)
language plpgsql
set search_path = ''
as $$
declare
  lim record;
  this_window timestamptz;
  counted integer;
  retry integer;
begin
  if subject_kind = 'address' and subject = 'unknown' then
    return query select null::integer, null::text; -- no address known: nobody to count
    return;
  end if;
  select l.max_writes, l.window_seconds into lim
    from private.write_rate_limits l
   where l.subject_kind = take_write.subject_kind and l.subject in (take_write.subject, '*')
   order by l.subject = '*'
   limit 1;
  if not found then
    return query select null::integer, null::text;
    return;
  end if;
  this_window := to_timestamp(floor(extract(epoch from now()) / lim.window_seconds) * lim.window_seconds);
  if lim.max_writes > 0 then
    insert into private.write_rate_counters as c (subject, window_start, writes)
    values (take_write.subject_kind || ':' || take_write.subject, this_window, 1)
    on conflict on constraint write_rate_counters_pkey do update set writes = c.writes + 1
      where c.writes < lim.max_writes
    returning c.writes into counted;
  end if;
  -- A super admin is never refused (asked only on a refusal, so ordinary writes pay nothing):
  -- a budget set too low from the console can always be set back.
  if counted is not null
     or (take_write.subject_kind = 'user' and exists (
           select 1 from public.profiles p
            where p.id = case when take_write.subject ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                              then take_write.subject::uuid end
              and p.role = 'super_admin')) then
    return query select null::integer, null::text;
    return;
  end if;
  retry := greatest(1, ceil(extract(epoch from this_window - now()) + lim.window_seconds)::integer);
  return query select retry, format('Too many writes: at most %s every %s seconds. Try again in %s seconds.',
                                    lim.max_writes, lim.window_seconds, retry);
end
$$;

create or replace function private.admin_set_write_rate_limit(
  subject_kind text, subject text, max_writes integer, window_seconds integer
) returns table (id bigint, changed_by uuid, changed_at timestamptz, setting text, old_value jsonb, new_value jsonb)
language plpgsql security definer
set search_path = ''
as $$
declare
  who text := btrim(coalesce(subject, ''));
  before jsonb;
  after jsonb;
begin
  perform private.require_trusted_caller('change write rate limits');
  perform private.check_required('subject_kind', subject_kind);
  perform private.check_one_of('subject_kind', subject_kind, array['user', 'address']);
  perform private.check_required('max_writes', max_writes);
  perform private.check_between('max_writes', max_writes, 0, 1000000000);
  perform private.check_required('window_seconds', window_seconds);
  perform private.check_between('window_seconds', window_seconds, 1, 86400);
  if who = '' then
    raise exception 'subject: must not be empty (''*'' is the default of its kind)' using errcode = '23514';
  end if;
  -- A default that stops everyone is a lockout, not a limit: overrides of one subject may be 0.
  if who = '*' and max_writes < 10 then
    raise exception 'max_writes: the default of every % must allow at least 10 writes per window', subject_kind
      using errcode = '22023';
  end if;
  if who <> '*' and subject_kind = 'user' then
    if who !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
      raise exception 'subject: a user id (uuid) or ''*''' using errcode = '23514';
    end if;
    who := lower(who);
  elsif who <> '*' then
    -- One address, never a range (inet would read 10.0.0.0/8 as one host), and no IPv4-mapped
    -- IPv6 (its /64 would pool every IPv4 caller).
    if position('/' in who) > 0 or who ~* '^::ffff:' then
      raise exception 'subject: one IP address (no range, no IPv4-mapped IPv6) or ''*''' using errcode = '23514';
    end if;
    -- The form private.client_address gives the address (IPv6: its /64), so the row matches.
    who := private.client_address(jsonb_build_object('cf-connecting-ip', who));
    if who = 'unknown' then
      raise exception 'subject: an IP address or ''*''' using errcode = '23514';
    end if;
  end if;
  select jsonb_build_object('max_writes', l.max_writes, 'window_seconds', l.window_seconds) into before
    from private.write_rate_limits l
   where l.subject_kind = admin_set_write_rate_limit.subject_kind and l.subject = who
     for update;
  -- A merge (the migrations' one insert of this table stays the defaults' row, as
  -- tests/ratelimit_test.ts reads them); the row, when there is one, is locked above.
  merge into private.write_rate_limits l
  using (select admin_set_write_rate_limit.subject_kind as kind, who as subject_text,
                admin_set_write_rate_limit.max_writes as writes, admin_set_write_rate_limit.window_seconds as secs) v
     on l.subject_kind = v.kind and l.subject = v.subject_text
   when matched then update set max_writes = v.writes, window_seconds = v.secs
   when not matched then insert (subject_kind, subject, max_writes, window_seconds)
                         values (v.kind, v.subject_text, v.writes, v.secs);
  after := jsonb_build_object('max_writes', max_writes, 'window_seconds', window_seconds);
  return query
    insert into private.setting_changes as c (changed_by, setting, old_value, new_value)
    values ((select auth.uid()), format('write_rate_limits:%s:%s', subject_kind, who), before, after)
    returning c.id, c.changed_by, c.changed_at, c.setting, c.old_value, c.new_value;
end
$$;

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

comment on function private.impersonation_session_ended(uuid) is
  'True once an impersonation session was stopped or has expired, its admin demoted or deactivated, or its target deactivated or made a super admin.';
