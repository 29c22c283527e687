-- =============================================================================================
-- Offline sync: row versions, tombstones and If-Match
-- =============================================================================================
-- What lets a device keep its own copy of its owner's journal (notebooks, journal_entries with
-- their text, goals, goal_check_ins) and learn what changed since it last asked (WatermelonDB's
-- protocol: GET/POST /api/sync, docs/sync.md), and what lets any writer refuse to overwrite a
-- change it has not seen (ETag / If-Match).
--
-- Versions are transaction ids, not clocks. Each synced row carries row_version, the id
-- (xid8) of the transaction that last changed it, and created_version, the one that made it. A
-- pull's cursor is the xmin of its snapshot: every transaction with a smaller id has ended,
-- so the changes below the cursor are final and the next pull takes those at or above it.
-- A transaction that started early and commits late keeps the cursor below its own id until
-- it ends: its changes are pulled late, never skipped, and never twice. A clock cursor
-- (now(), or a sequence) would skip it: its rows carry a time older than a cursor already
-- handed out by the time they become visible.
--
-- Deletions leave a tombstone (private.sync_tombstones) for 90 days; a cursor older than the
-- pruned tombstones (private.sync_state.pruned_below) gets a full replacement pull.

-- ---------------------------------------------------------------------------------------------
-- Row versions
-- ---------------------------------------------------------------------------------------------

-- The columns (row_version, created_version) and each table's (user_id, row_version) index
-- are declared with their tables (journal/tables.sql, goals.sql).

-- The header value an If-Match names: a list of entity tags ("123", W/"123") or *.
create or replace function private.if_match_allows(if_match text, version xid8) returns boolean
language sql immutable
set search_path = ''
as $$
  select exists (
    select 1 from pg_catalog.regexp_split_to_table(if_match, ',') t
     where pg_catalog.btrim(t) = '*'
        or pg_catalog.btrim(pg_catalog.regexp_replace(pg_catalog.btrim(t), '^(W/)?"?([^"]*)"?$', '\2')) = version::text)
$$;
comment on function private.if_match_allows(text, xid8) is
  'True when an If-Match header value names this version (its ETag is "<row_version>") or is *.';
-- The stamp trigger runs as the writer, so the writers' roles call it.
grant execute on function private.if_match_allows(text, xid8) to authenticated, service_role;

-- Refuses the write when the request carries an If-Match (PostgREST passes headers in
-- request.headers, for /api's writes as for direct ones) that does not name the version the
-- row has. Only for what a statement names (trigger depth 1): what our own triggers change
-- beside it, such as a notebook's entries, is not what the header was about.
create or replace function private.refuse_stale_if_match(tbl text, id uuid, version xid8) returns void
language plpgsql
set search_path = ''
as $$
declare
  headers text := pg_catalog.current_setting('request.headers', true);
  if_match text;
begin
  if pg_catalog.pg_trigger_depth() <> 1 or headers is null or pg_catalog.strpos(headers, '"if-match"') = 0 then
    return;
  end if;
  if_match := headers::json ->> 'if-match';
  if if_match is not null and not private.if_match_allows(if_match, version) then
    raise exception '% changed since it was read (If-Match does not name its current version)', tbl
      using errcode = 'PT412', hint = 'precondition_failed', detail = id::text;
  end if;
end
$$;
grant execute on function private.refuse_stale_if_match(text, uuid, xid8) to authenticated, service_role;

-- The first change of a row in a transaction answers to the request's If-Match, then takes
-- this transaction's id as its version.
create or replace function private.stamp_row_version() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if old.row_version is distinct from pg_catalog.pg_current_xact_id() then
    perform private.refuse_stale_if_match(tg_table_name, old.id, old.row_version);
    if tg_op = 'UPDATE' then
      new.row_version := pg_catalog.pg_current_xact_id();
    end if;
  end if;
  return case when tg_op = 'DELETE' then old else new end;
end
$$;
comment on function private.stamp_row_version() is
  'Before a change of a synced row: checks the request''s If-Match against the version replaced, then stamps this transaction''s id.';

-- A direct write of an entry's text answers to the entry's If-Match: the text is part of the
-- entry's version (an entry already changed in this transaction was checked then).
create or replace function private.check_text_if_match() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  version xid8;
begin
  select e.row_version into version from public.journal_entries e where e.id = old.entry_id;
  if version is distinct from pg_catalog.pg_current_xact_id() then
    perform private.refuse_stale_if_match('journal_entries', old.entry_id, version);
  end if;
  return case when tg_op = 'DELETE' then old else new end;
end
$$;
create trigger journal_entry_contents_if_match before update or delete on public.journal_entry_contents
  for each row execute function private.check_text_if_match();
create trigger notebooks_row_version before update or delete on public.notebooks
  for each row execute function private.stamp_row_version();
create trigger journal_entries_row_version before update or delete on public.journal_entries
  for each row execute function private.stamp_row_version();
create trigger goals_row_version before update or delete on public.goals
  for each row execute function private.stamp_row_version();
create trigger goal_check_ins_row_version before update or delete on public.goal_check_ins
  for each row execute function private.stamp_row_version();

-- The text is part of the entry's synced record: a text written apart from its entry (a
-- direct insert of journal_entry_contents) bumps the entry. Edits of the text already touch the
-- entry's updated_at (journal/visibility.sql), which bumps it; the text written with a new
-- entry, in its transaction, needs nothing.
create or replace function private.bump_entry_on_new_content() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  update public.journal_entries set updated_at = now()
   where id = new.entry_id and row_version <> pg_catalog.pg_current_xact_id();
  return null;
end
$$;
create trigger journal_entry_contents_sync_bump after insert on public.journal_entry_contents
  for each row execute function private.bump_entry_on_new_content();

-- ---------------------------------------------------------------------------------------------
-- Tombstones
-- ---------------------------------------------------------------------------------------------

create table private.sync_tombstones (
  table_name text not null check (table_name in ('notebooks', 'journal_entries', 'goals', 'goal_check_ins')),
  id uuid not null,
  user_id uuid not null references public.profiles (id) on delete cascade,
  row_version xid8 not null default pg_current_xact_id(),
  deleted_at timestamptz not null default now(),
  -- By owner too: an id another user makes again (ids are the clients' to choose) neither
  -- hides this owner's deletion nor takes its tombstone over.
  primary key (table_name, user_id, id)
);
alter table private.sync_tombstones enable row level security;
comment on table private.sync_tombstones is
  'Synced rows deleted in the last 90 days (the version of the deleting transaction), so devices learn of deletions; pruned by pg_cron sync-tombstones.';
create index sync_tombstones_by_user on private.sync_tombstones (user_id, row_version);
create index sync_tombstones_by_age on private.sync_tombstones (deleted_at);

-- Set-based, one insert per statement. Rows of an account being deleted leave none (their
-- profile is already gone when its cascade reaches them).
create or replace function private.record_sync_tombstones() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  insert into private.sync_tombstones as t (table_name, id, user_id)
  select tg_table_name, o.id, o.user_id
    from gone o
   where exists (select 1 from public.profiles p where p.id = o.user_id)
  on conflict (table_name, user_id, id) do update
    set row_version = excluded.row_version, deleted_at = excluded.deleted_at;
  return null;
end
$$;
comment on function private.record_sync_tombstones() is 'After a delete of synced rows: one tombstone per row (its table, id and owner).';
create trigger notebooks_sync_tombstones after delete on public.notebooks
  referencing old table as gone for each statement execute function private.record_sync_tombstones();
create trigger journal_entries_sync_tombstones after delete on public.journal_entries
  referencing old table as gone for each statement execute function private.record_sync_tombstones();
create trigger goals_sync_tombstones after delete on public.goals
  referencing old table as gone for each statement execute function private.record_sync_tombstones();
create trigger goal_check_ins_sync_tombstones after delete on public.goal_check_ins
  referencing old table as gone for each statement execute function private.record_sync_tombstones();

-- The oldest cursor still served incrementally: tombstones of versions below it may be gone.
create table private.sync_state (
  singleton boolean primary key default true check (singleton),
  pruned_below xid8 not null default '0'
);
alter table private.sync_state enable row level security;
comment on table private.sync_state is
  'One row: pruned_below, the version under which tombstones may have been pruned (older cursors get a full replacement pull).';

-- pg_cron sync-tombstones, hourly: at most max_rows tombstones older than 90 days per run,
-- logged in private.job_runs with what remains.
create or replace function private.prune_sync_tombstones(max_rows integer default 50000) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  started timestamptz := clock_timestamp();
  pruned integer;
  newest_pruned xid8;
  left_over integer;
begin
  if not private.is_trusted_caller() then
    raise exception 'only the scheduler may prune tombstones' using errcode = '42501';
  end if;
  with gone as (
    delete from private.sync_tombstones t
     where (t.table_name, t.user_id, t.id) in (
       select table_name, user_id, id from private.sync_tombstones
        where deleted_at < now() - interval '90 days'
        order by deleted_at limit max_rows)
    returning t.row_version)
  select count(*), max(row_version) into pruned, newest_pruned from gone;
  if newest_pruned is not null then
    insert into private.sync_state as s (singleton, pruned_below)
    values (true, (newest_pruned::text::bigint + 1)::text::xid8)
    on conflict (singleton) do update set pruned_below = greatest(s.pruned_below, excluded.pruned_below);
  end if;
  select count(*) into left_over from private.sync_tombstones where deleted_at < now() - interval '90 days';
  perform private.record_job_run('sync-tombstones', started, pruned, 0, left_over,
                                 jsonb_build_object('ms', round(extract(epoch from clock_timestamp() - started) * 1000)));
  return jsonb_build_object('pruned', pruned, 'remaining', left_over);
end
$$;
comment on function private.prune_sync_tombstones(integer) is
  'The sync-tombstones job: deletes at most max_rows tombstones older than 90 days, raises pruned_below past them; remaining > 0: run again.';
