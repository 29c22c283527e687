-- =============================================================================================
-- Impersonation
-- =============================================================================================
-- A super admin may act as a user for a while, with a mandatory reason: an immutable audit
-- trail of each session, and everything done in it (each row written, each mutating /api
-- request) recorded with its impersonator. An ended session (stopped, expired, or its
-- impersonator no longer a super admin) can do nothing more, by any path.

-- ---------------------------------------------------------------------------------------------
-- The audit trail
-- ---------------------------------------------------------------------------------------------

-- Plain uuids, no foreign keys: an audit row outlives the accounts it names and never changes.
create table public.impersonation_audit (
  id bigint generated always as identity primary key,
  session_id uuid not null,
  event text not null check (event in ('start', 'stop')),
  admin_id uuid not null,
  target_id uuid not null,
  reason text not null check (char_length(btrim(reason)) between 1 and 1000),
  expires_at timestamptz,
  created_at timestamptz not null default now(),
  unique (session_id, event)
);
alter table public.impersonation_audit enable row level security;
comment on table public.impersonation_audit is
  'Impersonation sessions: a start row (admin, target, mandatory reason, expiry) and a stop row. Super admins read; '
  'nobody updates or deletes (a trigger refuses it, whoever asks).';
revoke all on public.impersonation_audit from anon, authenticated, service_role;
grant select on public.impersonation_audit to authenticated, service_role;

create index impersonation_audit_newest on public.impersonation_audit (created_at desc, id desc);
-- One user's sessions (the console's user page: GET /admin/impersonation/audit?target=).
create index impersonation_audit_target on public.impersonation_audit (target_id, created_at desc, id desc);

create table public.impersonation_writes (
  id bigint generated always as identity primary key,
  session_id uuid not null,
  admin_id uuid not null,
  target_id uuid not null,
  table_name text,
  operation text not null,
  row_id text,
  created_at timestamptz not null default now(),
  kind text not null default 'write' check (kind in ('write', 'request')),
  actor_role text,
  detail jsonb,
  constraint impersonation_writes_table_of_write check (kind <> 'write' or table_name is not null)
);
alter table public.impersonation_writes enable row level security;
comment on table public.impersonation_writes is
  'Everything done in an impersonation session, attributed to its impersonator: each row written (kind write: '
  'table, operation, row id; actor_role authenticated = the token, service_role = the api on the session''s '
  'behalf) and each mutating /api request (kind request: method, detail.path), recorded before it runs. '
  'Super admins read; immutable.';
comment on column public.impersonation_writes.row_id is
  'The row''s id, or its primary key as JSON when the key is not a single id column.';
revoke all on public.impersonation_writes from anon, authenticated, service_role;
grant select on public.impersonation_writes to authenticated, service_role;

create index impersonation_writes_session on public.impersonation_writes (session_id, created_at);

create policy "impersonation_audit: super admins read" on public.impersonation_audit
  for select to authenticated using ((select private.is_super_admin()));

create policy "impersonation_writes: super admins read" on public.impersonation_writes
  for select to authenticated using ((select private.is_super_admin()));

-- The audit tables are immutable: any update, delete or truncate is refused, whoever asks. The
-- exceptions: for an account deletion (user_data/account_deletion_rows.sql) the user columns
-- named as the trigger's arguments may change to the deletion's tombstone, and a row whose
-- user_id is the account being deleted may go; the retention job purges impersonation_writes
-- past their keep (retention.sql).
create or replace function private.refuse_audit_change() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'UPDATE' then
    if private.only_tombstones_changed(to_jsonb(old), to_jsonb(new), tg_argv::text[]) then
      return new;
    end if;
  elsif tg_op = 'DELETE' then
    if private.account_deletion_in_progress((to_jsonb(old) ->> 'user_id')::uuid) then
      return old;
    end if;
    if tg_table_name = 'impersonation_writes' and current_setting('app.purging_expired', true) = 'on' then
      return old;
    end if;
  end if;
  raise exception '% rows are never changed or deleted', tg_table_name using errcode = '42501';
end
$$;

create trigger impersonation_audit_immutable before update or delete on public.impersonation_audit
  for each row execute function private.refuse_audit_change('admin_id', 'target_id');

create trigger impersonation_audit_no_truncate before truncate on public.impersonation_audit
  for each statement execute function private.refuse_audit_change();

create trigger impersonation_writes_immutable before update or delete on public.impersonation_writes
  for each row execute function private.refuse_audit_change('admin_id', 'target_id');

create trigger impersonation_writes_no_truncate before truncate on public.impersonation_writes
  for each statement execute function private.refuse_audit_change();

-- Starts a session (super admins only, by profiles.role): never another super admin, never an
-- inactive user; the reason is mandatory. The edge function signs the token for the session.
create or replace function private.start_impersonation(target_user_id uuid, reason text, lifetime_seconds integer default 900)
returns table (session_id uuid, target_id uuid, target_email text, expires_at timestamptz)
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  target public.profiles;
  why text := private.required_text(reason, 'reason', 1000);
  session uuid := gen_random_uuid();
  until timestamptz := now() + make_interval(secs => least(greatest(coalesce(lifetime_seconds, 900), 60), 900));
begin
  if me is null or not private.is_super_admin() then
    raise exception 'only super admins may impersonate' using errcode = '42501';
  end if;
  if nullif(current_setting('request.jwt.claims', true), '')::jsonb ? 'act' then
    raise exception 'an impersonation session cannot start another' using errcode = '42501';
  end if;
  select * into target from public.profiles p where p.id = target_user_id;
  if target.id is null then
    raise exception 'no user %', target_user_id using errcode = 'PT404';
  end if;
  if target.role = 'super_admin' then
    raise exception 'super admins cannot be impersonated' using errcode = '42501';
  end if;
  if not target.is_active then
    raise exception 'inactive users cannot be impersonated' using errcode = 'PT409';
  end if;
  insert into public.impersonation_audit (session_id, event, admin_id, target_id, reason, expires_at)
  values (session, 'start', me, target.id, why, until);
  return query select session, target.id, (select u.email::text from auth.users u where u.id = target.id), until;
end
$$;
grant execute on function private.start_impersonation(uuid,text,integer) to authenticated;

create or replace function public.start_impersonation(target_user_id uuid, reason text, lifetime_seconds integer default 900)
returns table (session_id uuid, target_id uuid, target_email text, expires_at timestamptz)
language sql security invoker
set search_path = ''
as $$ select * from private.start_impersonation(target_user_id, reason, lifetime_seconds) $$;
grant execute on function start_impersonation(uuid,text,integer) to authenticated, service_role;

-- The session an API request acts in, from its token's claims (null when not impersonating).
create or replace function private.impersonation_claims() returns jsonb
language sql stable
set search_path = ''
as $$
  select case when c ? 'act' and c ? 'impersonation_session' then c end
    from (select nullif(current_setting('request.jwt.claims', true), '')::jsonb as c) x
$$;
grant execute on function private.impersonation_claims() to authenticated, service_role;

-- Ends a session: the impersonation token itself (its session), or a super admin naming the
-- session. Returns false when it had already ended.
create or replace function private.stop_impersonation(session_id uuid default null) returns boolean
language plpgsql security definer
set search_path = ''
as $$
declare
  claims jsonb := private.impersonation_claims();
  session uuid := coalesce(session_id, (claims ->> 'impersonation_session')::uuid);
  started public.impersonation_audit;
begin
  if session is null then
    raise exception 'session_id: required (or call with the impersonation token)' using errcode = '22023';
  end if;
  select * into started from public.impersonation_audit a where a.session_id = session and a.event = 'start';
  if started.id is null then
    raise exception 'no impersonation session %', session using errcode = 'PT404';
  end if;
  if not ((claims ->> 'impersonation_session')::uuid is not distinct from session or private.is_super_admin()) then
    raise exception 'only the session''s token or a super admin may end it' using errcode = '42501';
  end if;
  insert into public.impersonation_audit (session_id, event, admin_id, target_id, reason)
  values (session, 'stop', started.admin_id, started.target_id, started.reason)
  on conflict on constraint impersonation_audit_session_id_event_key do nothing;
  return found;
end
$$;
grant execute on function private.stop_impersonation(uuid) to authenticated;

create or replace function public.stop_impersonation(session_id uuid default null) returns boolean
language sql security invoker
set search_path = ''
as $$ select private.stop_impersonation(session_id) $$;
grant execute on function stop_impersonation(uuid) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Every row written in a session
-- ---------------------------------------------------------------------------------------------

-- Records a row written in an impersonation session (the session from the token's claims or the
-- api's header), naming the row by id or primary key; refuses (401) once the session has ended.
create or replace function private.record_impersonated_write() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  ctx record;
  r jsonb;
  pk jsonb;
begin
  select * into ctx from private.impersonation_context();
  if ctx.session_id is null then
    return null;
  end if;
  if private.impersonation_session_ended(ctx.session_id) then
    raise exception 'The impersonation session has ended'
      using errcode = 'PT401', hint = 'impersonation_session_ended',
            detail = 'It was stopped or it expired; a super admin may start a new session.';
  end if;
  if tg_op = 'DELETE' then
    r := to_jsonb(old);
  else
    r := to_jsonb(new);
  end if;
  select jsonb_object_agg(a.attname::text, r -> a.attname::text) into pk
    from pg_catalog.pg_index i
    join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = any (i.indkey)
   where i.indrelid = tg_relid and i.indisprimary;
  insert into public.impersonation_writes (session_id, admin_id, target_id, table_name, operation, row_id, kind, actor_role)
  values (ctx.session_id, ctx.admin_id, ctx.target_id, tg_table_schema || '.' || tg_table_name, tg_op,
          coalesce(r ->> 'id', pk::text), 'write', ctx.actor_role);
  return null;
end
$$;
comment on function private.record_impersonated_write() is
  'AFTER row trigger on every audited table: records a write made in an impersonation session (refused once it has ended).';

create trigger labs_replication_removals_immutable before update or delete on public.labs_replication_removals
  for each row execute function private.refuse_audit_change('removed_by');

create trigger labs_replication_removals_no_truncate before truncate on public.labs_replication_removals
  for each statement execute function private.refuse_audit_change();

-- ---------------------------------------------------------------------------------------------
-- The session of a request
-- ---------------------------------------------------------------------------------------------

-- The session the current request acts in (no row outside one): from the impersonation token's
-- claims, or for the service role from the x-impersonation-session header the api sends.
create or replace function private.impersonation_context()
returns table (session_id uuid, admin_id uuid, target_id uuid, actor_role text)
language plpgsql stable security definer
set search_path = ''
as $$
declare
  claims jsonb := nullif(current_setting('request.jwt.claims', true), '')::jsonb;
  header text;
begin
  if claims ? 'impersonation_session' then
    return query select (claims ->> 'impersonation_session')::uuid, (claims -> 'act' ->> 'sub')::uuid,
                        (claims ->> 'sub')::uuid, claims ->> 'role';
    return;
  end if;
  if claims ->> 'role' is distinct from 'service_role' then
    return;
  end if;
  header := nullif(current_setting('request.headers', true), '')::jsonb ->> 'x-impersonation-session';
  if header is null then
    return;
  end if;
  return query select a.session_id, a.admin_id, a.target_id, 'service_role'::text
                 from public.impersonation_audit a
                where a.session_id = header::uuid and a.event = 'start';
  if not found then
    raise exception 'x-impersonation-session: no session %', header using errcode = '22023';
  end if;
end
$$;
comment on function private.impersonation_context() is
  'The impersonation session of the request: the token''s claims, or (service role only) the x-impersonation-session header.';
grant execute on function private.impersonation_context() to authenticated, service_role;

-- Stopped, past its expiry, or no longer backed by who it was granted to: the impersonator is
-- no longer an active super admin (a demotion is immediate, impersonation included), or the
-- target was deactivated (inactive users cannot be impersonated, so neither can they stay so).
-- An unknown session counts as ended.
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
comment on function private.impersonation_session_ended(uuid) is
  'True once an impersonation session was stopped or has expired, its admin demoted or deactivated, or its target deactivated or made a super admin.';
grant execute on function private.impersonation_session_ended(uuid) to authenticated, service_role;

-- False only for a request made with the token of an ended session. Requests with other tokens
-- (all but a handful) cost one string search.
create or replace function private.impersonation_live() returns boolean
language plpgsql stable
set search_path = ''
as $$
declare
  raw text := current_setting('request.jwt.claims', true);
begin
  if raw is null or strpos(raw, '"impersonation_session"') = 0 then
    return true;
  end if;
  -- The string search only filters: the words may stand in any claim (user_metadata is the
  -- user's to write), and only the top-level claim makes an impersonation token.
  if not (raw::jsonb ? 'impersonation_session') then
    return true;
  end if;
  return not private.impersonation_session_ended((raw::jsonb ->> 'impersonation_session')::uuid);
end
$$;
comment on function private.impersonation_live() is
  'False for a request made with the token of a stopped or expired impersonation session.';
grant execute on function private.impersonation_live() to anon, authenticated, service_role;

-- PostgREST's pre-request function: every request, reads included, of an ended session is a 401.
create or replace function private.refuse_ended_impersonation() returns void
language plpgsql stable
set search_path = ''
as $$
begin
  if not private.impersonation_live() then
    raise exception 'The impersonation session has ended'
      using errcode = 'PT401', hint = 'impersonation_session_ended',
            detail = 'It was stopped or it expired; a super admin may start a new session.';
  end if;
end
$$;
comment on function private.refuse_ended_impersonation() is
  'PostgREST db-pre-request (authenticator role setting pgrst.db_pre_request): 401 for a stopped or expired impersonation session.';
grant execute on function private.refuse_ended_impersonation() to anon, authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- /api: the session check and the request row, in one round trip
-- ---------------------------------------------------------------------------------------------

-- Called by /api before any route runs, with the caller's token: 401 when its session has
-- ended; a mutating request (not GET/HEAD/OPTIONS) is recorded first. Nothing for other tokens.
create or replace function private.begin_impersonated_request(method text, path text) returns void
language plpgsql security definer
set search_path = ''
as $$
declare
  ctx record;
  verb text := upper(coalesce(method, ''));
begin
  select * into ctx from private.impersonation_context() c where c.actor_role = 'authenticated';
  if ctx.session_id is null then
    return;
  end if;
  if verb !~ '^[A-Z]{1,10}$' then
    raise exception 'method: not an HTTP method' using errcode = '22023';
  end if;
  if path is null or char_length(path) not between 1 and 2000 then
    raise exception 'path: required, at most 2000 characters' using errcode = '22023';
  end if;
  if private.impersonation_session_ended(ctx.session_id) then
    raise exception 'The impersonation session has ended'
      using errcode = 'PT401', hint = 'impersonation_session_ended',
            detail = 'It was stopped or it expired; a super admin may start a new session.';
  end if;
  if verb not in ('GET', 'HEAD', 'OPTIONS') then
    insert into public.impersonation_writes (session_id, admin_id, target_id, kind, operation, actor_role, detail)
    values (ctx.session_id, ctx.admin_id, ctx.target_id, 'request', verb, ctx.actor_role, jsonb_build_object('path', path));
  end if;
end
$$;
grant execute on function private.begin_impersonated_request(text,text) to authenticated;

create or replace function public.begin_impersonated_request(method text, path text) returns void
language sql security invoker
set search_path = ''
as $$ select private.begin_impersonated_request(method, path) $$;
comment on function public.begin_impersonated_request(text, text) is
  'For /api: refuses (401) a stopped or expired impersonation session and records a mutating request before it runs; no-op for other tokens.';
grant execute on function begin_impersonated_request(text,text) to authenticated, service_role;

-- The tables that carry the trigger: every table that holds rows (plain tables and partitions,
-- never a partitioned parent, which holds none) of the project's schemas (all but Postgres' and
-- the platform's, the list of the schema lint) and storage.objects; not the audit tables
-- themselves, not extensions' tables. Partitions carry their own trigger rather than a clone of
-- the parent's, so a table made first and attached later (pg_partman's way) keeps the one it got
-- when it was made, with no clash of names, and keeps it when it is detached.
create or replace function private.is_impersonation_audited(rel oid) returns boolean
language sql stable
set search_path = ''
as $$
  select coalesce((
    select c.relkind = 'r'
       and (c.oid = to_regclass('storage.objects')
            or (n.nspname not in ('information_schema', 'auth', 'storage', 'vault', 'net', 'extensions', 'cron',
                                  'supabase_migrations', 'graphql', 'graphql_public', 'realtime', '_realtime',
                                  'pgsodium', 'pgsodium_masks', 'pgbouncer', 'supabase_functions', '_analytics')
                and n.nspname !~ '^pg_'))
       and c.oid not in ('public.impersonation_audit'::regclass, 'public.impersonation_writes'::regclass)
       -- The write rate limit's bookkeeping (rate_limits.sql): counted requests, not rows anyone wrote.
       and c.oid::regclass::text not in ('private.write_rate_counters', 'private.api_write_secret')
       and not exists (select 1 from pg_catalog.pg_depend d
                        where d.classid = 'pg_catalog.pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')
      from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
     where c.oid = rel), false)
$$;
comment on function private.is_impersonation_audited(oid) is
  'Whether a table must carry zz_record_impersonated_write: the project''s tables and storage.objects, not the audit tables '
  'nor the write rate limit''s counters.';

-- Attaches the trigger (once). The WHEN clause keeps ordinary writes off the trigger queue: only
-- a request whose claims or headers name a session reaches the function.
create or replace function private.attach_impersonation_audit(tbl regclass) returns boolean
language plpgsql
set search_path = ''
as $$
begin
  if exists (select 1 from pg_catalog.pg_trigger t where t.tgrelid = tbl and t.tgname = 'zz_record_impersonated_write') then
    return false;
  end if;
  execute format(
    'create trigger zz_record_impersonated_write after insert or update or delete on %s for each row '
    'when (strpos(coalesce(current_setting(''request.jwt.claims'', true), ''''), ''"impersonation_session"'') > 0 '
    'or strpos(coalesce(current_setting(''request.headers'', true), ''''), ''"x-impersonation-session"'') > 0) '
    'execute function private.record_impersonated_write()', tbl);
  return true;
end
$$;
comment on function private.attach_impersonation_audit(regclass) is
  'Attaches the impersonation audit trigger to a table unless it has it.';

-- Every table created (or moved into an audited schema) later gets the trigger in the same
-- statement. On hosted Supabase the postgres role may create event triggers (supautils); they
-- fire for its DDL (migrations, the SQL editor) and are skipped for superusers, which only the
-- platform's own services run as. Security definer: DDL by any role (a temporary table made by
-- a function running as authenticated) runs it without rights on the helpers.
create or replace function private.audit_new_tables() returns event_trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  t record;
begin
  for t in
    select distinct d.objid::regclass as tbl
      from pg_catalog.pg_event_trigger_ddl_commands() d
     where d.classid = 'pg_catalog.pg_class'::regclass and not d.in_extension
       and private.is_impersonation_audited(d.objid)
  loop
    perform private.attach_impersonation_audit(t.tbl);
  end loop;
end
$$;
comment on function private.audit_new_tables() is
  'Event trigger (ddl_command_end): attaches the impersonation audit trigger to every new audited table.';

-- The trigger on every audited table: those of the files before this one now, and every table
-- created after (in the files after this one, in a migration, in the SQL editor) by the event
-- trigger, in the statement that creates it.
do $$
begin
  perform private.attach_impersonation_audit(c.oid::regclass)
     from pg_catalog.pg_class c
    where private.is_impersonation_audited(c.oid);
end
$$;
create event trigger audit_impersonated_writes_on_new_tables on ddl_command_end
  when tag in ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'ALTER TABLE')
  execute function private.audit_new_tables();

-- ---------------------------------------------------------------------------------------------
-- Storage: hosted Storage queries storage.objects with the caller's claims
-- ---------------------------------------------------------------------------------------------

create policy "storage.objects: nothing for an ended impersonation session" on storage.objects
  as restrictive for all to authenticated
  using ((select private.impersonation_live()))
  with check ((select private.impersonation_live()));
comment on policy "storage.objects: nothing for an ended impersonation session" on storage.objects is
  'Hosted Storage runs no PostgREST pre-request: a stopped or expired impersonation token lists, reads and writes nothing.';

-- ---------------------------------------------------------------------------------------------
-- Realtime: hosted Realtime checks each change of the supabase_realtime tables as the subscriber
-- ---------------------------------------------------------------------------------------------

-- Realtime runs no pre-request either: every table of the publication carries this policy, so a
-- channel joined with an impersonation token receives nothing once its session has ended.
create policy "notifications: nothing for an ended impersonation session" on public.notifications
  as restrictive for select to authenticated
  using ((select private.impersonation_live()));
comment on policy "notifications: nothing for an ended impersonation session" on public.notifications is
  'Hosted Realtime runs no PostgREST pre-request: a stopped or expired impersonation token is sent no notification.';
create policy "encouragement_sent_drops: nothing for an ended impersonation" on public.encouragement_sent_drops
  as restrictive for select to authenticated
  using ((select private.impersonation_live()));
comment on policy "encouragement_sent_drops: nothing for an ended impersonation" on public.encouragement_sent_drops is
  'Hosted Realtime runs no PostgREST pre-request: a stopped or expired impersonation token is sent no drop.';
create policy "workout_checkin_events: nothing for an ended impersonation" on public.workout_checkin_events
  as restrictive for select to authenticated
  using ((select private.impersonation_live()));
comment on policy "workout_checkin_events: nothing for an ended impersonation" on public.workout_checkin_events is
  'Hosted Realtime runs no PostgREST pre-request: a stopped or expired impersonation token is sent no check-in.';
create policy "journal_entries: nothing for an ended impersonation" on public.journal_entries
  as restrictive for select to authenticated
  using ((select private.impersonation_live()));
comment on policy "journal_entries: nothing for an ended impersonation" on public.journal_entries is
  'Hosted Realtime runs no PostgREST pre-request: a stopped or expired impersonation token is sent no entry change.';

-- ---------------------------------------------------------------------------------------------
-- What an impersonator may not do: link outside accounts or start payments
-- ---------------------------------------------------------------------------------------------

-- A session is for seeing and fixing what the user sees, not for tying the user to accounts
-- the impersonator controls: a music login completes at the provider after the session may
-- have ended (its callback carries no token), and a checkout is paid at Stripe, where the
-- payer is whoever holds the page. Both are refused (403) inside a session, on every path.
create or replace function private.refuse_while_impersonating(action text) returns void
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if exists (select 1 from private.impersonation_context()) then
    raise exception 'Not while impersonating: % is for the user themselves', coalesce(action, 'this')
      using errcode = '42501';
  end if;
end
$$;
comment on function private.refuse_while_impersonating(text) is
  '403 inside an impersonation session (the token''s, or the api''s service role acting for one).';
grant execute on function private.refuse_while_impersonating(text) to authenticated, service_role;

create or replace function public.refuse_while_impersonating(action text) returns void
language sql stable security invoker
set search_path = ''
as $$ select private.refuse_while_impersonating(action) $$;
comment on function public.refuse_while_impersonating(text) is
  'For /api routes that reach a provider: 403 inside an impersonation session, nothing otherwise.';
grant execute on function refuse_while_impersonating(text) to authenticated, service_role;

