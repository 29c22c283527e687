-- =============================================================================================
-- Offline sync: what a device's records look like, and the pull
-- =============================================================================================
-- GET /api/sync (public.sync_pull) in WatermelonDB's protocol (docs/sync.md). Versions, the
-- cursor and tombstones: sync.sql. The push: sync_push.sql.

-- ---------------------------------------------------------------------------------------------
-- The synced schema, by version
-- ---------------------------------------------------------------------------------------------
-- The tables and columns a device's schema version knows (WatermelonDB's schemaVersion).
-- Version 1: notebooks, journal_entries, goals. Version 2: goal_check_ins, and the entries'
-- mood_detected, music_track_id and background_url. A device gets the columns of its version;
-- after a migration it names what it added and gets those columns of the records it has.
-- kind: how the value travels (text, uuid, tags: a JSON array in a string, date: YYYY-MM-DD,
-- ms: milliseconds since 1970, bool). writable: a push may set it (else ignored; the server's).
create or replace function private.sync_columns()
returns table (table_name text, column_name text, since integer, kind text, writable boolean, nullable boolean)
language sql immutable
set search_path = ''
as $$
  values
    ('notebooks', 'id', 1, 'uuid', false, false),
    ('notebooks', 'user_id', 1, 'uuid', false, false),
    ('notebooks', 'name', 1, 'text', true, false),
    ('notebooks', 'metadata_visibility', 1, 'text', true, false),
    ('notebooks', 'content_visibility', 1, 'text', true, false),
    ('notebooks', 'team_id', 1, 'uuid', true, true),
    ('notebooks', 'org_id', 1, 'uuid', true, true),
    ('notebooks', 'created_at', 1, 'ms', false, false),
    ('notebooks', 'updated_at', 1, 'ms', false, false),
    ('journal_entries', 'id', 1, 'uuid', false, false),
    ('journal_entries', 'user_id', 1, 'uuid', false, false),
    ('journal_entries', 'notebook_id', 1, 'uuid', true, true),
    ('journal_entries', 'title', 1, 'text', true, false),
    ('journal_entries', 'content', 1, 'text', true, false),
    ('journal_entries', 'mood', 1, 'text', true, true),
    ('journal_entries', 'tags', 1, 'tags', true, false),
    ('journal_entries', 'metadata_visibility', 1, 'text', true, false),
    ('journal_entries', 'content_visibility', 1, 'text', true, false),
    ('journal_entries', 'team_id', 1, 'uuid', true, true),
    ('journal_entries', 'org_id', 1, 'uuid', true, true),
    ('journal_entries', 'created_at', 1, 'ms', false, false),
    ('journal_entries', 'updated_at', 1, 'ms', false, false),
    ('journal_entries', 'mood_detected', 2, 'bool', false, false),
    ('journal_entries', 'music_track_id', 2, 'text', false, true),
    ('journal_entries', 'background_url', 2, 'text', false, true),
    ('goals', 'id', 1, 'uuid', false, false),
    ('goals', 'user_id', 1, 'uuid', false, false),
    ('goals', 'title', 1, 'text', true, false),
    ('goals', 'description', 1, 'text', true, false),
    ('goals', 'target_date', 1, 'date', true, true),
    ('goals', 'status', 1, 'text', true, false),
    ('goals', 'created_at', 1, 'ms', false, false),
    ('goals', 'updated_at', 1, 'ms', false, false),
    ('goal_check_ins', 'id', 2, 'uuid', false, false),
    ('goal_check_ins', 'user_id', 2, 'uuid', false, false),
    ('goal_check_ins', 'goal_id', 2, 'uuid', true, false),
    ('goal_check_ins', 'status', 2, 'text', true, false),
    ('goal_check_ins', 'notes', 2, 'text', true, false),
    ('goal_check_ins', 'created_at', 2, 'ms', false, false)
$$;
comment on function private.sync_columns() is
  'The synced tables'' columns: the schema version that added each, how its value travels, whether a push may set it.';
grant execute on function private.sync_columns() to authenticated;

-- The newest synced schema version (the highest `since` above).
create or replace function private.sync_schema_version() returns integer
language sql immutable
set search_path = ''
as $$ select 2 $$;
grant execute on function private.sync_schema_version() to authenticated;

-- A time as the protocol carries it: milliseconds since 1970.
create or replace function private.sync_ms(t timestamptz) returns bigint
language sql immutable strict
set search_path = ''
as $$ select pg_catalog.floor(extract(epoch from t) * 1000)::bigint $$;
grant execute on function private.sync_ms(timestamptz) to authenticated;

-- A cursor as the protocol carries it (a positive number) and back.
create or replace function private.sync_cursor(v xid8) returns bigint
language sql immutable strict
set search_path = ''
as $$ select v::text::bigint $$;
grant execute on function private.sync_cursor(xid8) to authenticated;
create or replace function private.sync_version(cursor bigint) returns xid8
language sql immutable strict
set search_path = ''
as $$ select cursor::text::xid8 $$;
grant execute on function private.sync_version(bigint) to authenticated;

-- ---------------------------------------------------------------------------------------------
-- Records (each as every version has it; the pull drops what the device's version lacks)
-- ---------------------------------------------------------------------------------------------
-- The caller's rows of one table changed in [since, below) (since null: all below), as
-- (id, created_version, record). Invoker: RLS and the caller's own rows decide. Both bounds are
-- plain comparisons, so even a generic plan reads (user_id, row_version) as a range.
create or replace function private.sync_records(tbl text, since xid8, below xid8)
returns table (id uuid, created_version xid8, record jsonb)
language plpgsql stable
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
begin
  if tbl = 'notebooks' then
    return query
      select n.id, n.created_version, jsonb_build_object(
               'id', n.id, 'user_id', n.user_id, 'name', n.name,
               'metadata_visibility', n.metadata_visibility, 'content_visibility', n.content_visibility,
               'team_id', n.team_id, 'org_id', n.org_id,
               'created_at', private.sync_ms(n.created_at), 'updated_at', private.sync_ms(n.updated_at))
        from public.notebooks n
       where n.user_id = me and n.row_version < below and n.row_version >= coalesce(since, '0'::xid8);
  elsif tbl = 'journal_entries' then
    return query
      select e.id, e.created_version, jsonb_build_object(
               'id', e.id, 'user_id', e.user_id, 'notebook_id', e.notebook_id, 'title', e.title,
               'content', coalesce(c.content, ''), 'mood', e.mood, 'tags', to_json(e.tags)::text,
               'metadata_visibility', e.metadata_visibility, 'content_visibility', e.content_visibility,
               'team_id', e.team_id, 'org_id', e.org_id,
               'created_at', private.sync_ms(e.created_at), 'updated_at', private.sync_ms(e.updated_at),
               'mood_detected', e.mood_detected, 'music_track_id', e.music_track_id, 'background_url', e.background_url)
        from public.journal_entries e
        left join public.journal_entry_contents c on c.entry_id = e.id
       where e.user_id = me and e.row_version < below and e.row_version >= coalesce(since, '0'::xid8);
  elsif tbl = 'goals' then
    return query
      select g.id, g.created_version, jsonb_build_object(
               'id', g.id, 'user_id', g.user_id, 'title', g.title, 'description', g.description,
               'target_date', g.target_date, 'status', g.status,
               'created_at', private.sync_ms(g.created_at), 'updated_at', private.sync_ms(g.updated_at))
        from public.goals g
       where g.user_id = me and g.row_version < below and g.row_version >= coalesce(since, '0'::xid8);
  elsif tbl = 'goal_check_ins' then
    return query
      select k.id, k.created_version, jsonb_build_object(
               'id', k.id, 'user_id', k.user_id, 'goal_id', k.goal_id, 'status', k.status, 'notes', k.notes,
               'created_at', private.sync_ms(k.created_at))
        from public.goal_check_ins k
       where k.user_id = me and k.row_version < below and k.row_version >= coalesce(since, '0'::xid8);
  else
    raise exception 'not a synced table: %', tbl using errcode = '22023';
  end if;
end
$$;
comment on function private.sync_records(text, xid8, xid8) is
  'The caller''s rows of one synced table changed in [since, below), as protocol records (every column of the newest version).';
grant execute on function private.sync_records(text, xid8, xid8) to authenticated;

-- The caller's deletions in one table in [since, below), leaving out ids that exist again.
create or replace function private.sync_deleted_ids(tbl text, since xid8, below xid8) returns uuid[]
language plpgsql stable security definer
set search_path = ''
as $$
declare
  ids uuid[];
begin
  execute format(
    'select coalesce(array_agg(t.id), ''{}'') from private.sync_tombstones t
      where t.user_id = $1 and t.table_name = $2 and t.row_version >= $3 and t.row_version < $4
        and not exists (select 1 from public.%I x where x.id = t.id and x.user_id = t.user_id)', tbl)
    into ids using (select auth.uid()), tbl, since, below;
  return ids;
end
$$;
comment on function private.sync_deleted_ids(text, xid8, xid8) is
  'Ids of the caller''s rows of one synced table deleted in [since, below) and not made again by the caller.';
revoke all on function private.sync_deleted_ids(text, xid8, xid8) from public;
grant execute on function private.sync_deleted_ids(text, xid8, xid8) to authenticated;

-- The version below which tombstones may be gone (a cursor under it starts over).
create or replace function private.sync_pruned_below() returns xid8
language sql stable security definer
set search_path = ''
as $$ select coalesce((select pruned_below from private.sync_state), '0'::xid8) $$;
revoke all on function private.sync_pruned_below() from public;
grant execute on function private.sync_pruned_below() to authenticated;

-- ---------------------------------------------------------------------------------------------
-- The pull
-- ---------------------------------------------------------------------------------------------
-- Validates a pull's migration ({from, tables, columns: [{table, columns}]}) against what the
-- device's version knows; returns the tables whose every record the device needs again.
create or replace function private.sync_migration_tables(migration jsonb, schema_version integer) returns text[]
language plpgsql immutable
set search_path = ''
as $$
declare
  t text;
  c jsonb;
  col text;
  needed text[] := '{}'::text[];
begin
  if migration is null or jsonb_typeof(migration) = 'null' then
    return needed;
  end if;
  if jsonb_typeof(migration) <> 'object' then
    raise exception 'migration: must be an object {from, tables, columns} or null' using errcode = '22023';
  end if;
  if jsonb_typeof(migration -> 'from') is distinct from 'number' or (migration ->> 'from')::numeric <> floor((migration ->> 'from')::numeric)
     or (migration ->> 'from')::numeric not between 1 and schema_version - 1 then
    raise exception 'migration.from: must be a schema version below schema_version (%)', schema_version using errcode = '22023';
  end if;
  if jsonb_typeof(coalesce(migration -> 'tables', '[]')) <> 'array' or jsonb_typeof(coalesce(migration -> 'columns', '[]')) <> 'array' then
    raise exception 'migration: tables and columns must be arrays' using errcode = '22023';
  end if;
  for t in select jsonb_array_elements_text(coalesce(migration -> 'tables', '[]')) loop
    if not exists (select 1 from private.sync_columns() s where s.table_name = t and s.since <= schema_version) then
      raise exception 'migration.tables: % is not a synced table at schema version %', t, schema_version using errcode = '22023';
    end if;
    needed := needed || t;
  end loop;
  for c in select jsonb_array_elements(coalesce(migration -> 'columns', '[]')) loop
    t := c ->> 'table';
    if jsonb_typeof(c) <> 'object' or jsonb_typeof(c -> 'columns') is distinct from 'array' or t is null then
      raise exception 'migration.columns: each item must be {table, columns: [...]}' using errcode = '22023';
    end if;
    for col in select jsonb_array_elements_text(c -> 'columns') loop
      if not exists (select 1 from private.sync_columns() s where s.table_name = t and s.column_name = col and s.since <= schema_version) then
        raise exception 'migration.columns: %.% is not a synced column at schema version %', t, col, schema_version using errcode = '22023';
      end if;
    end loop;
    needed := needed || t;
  end loop;
  return needed;
end
$$;
grant execute on function private.sync_migration_tables(jsonb, integer) to authenticated;

-- GET /api/sync: {changes, timestamp} (WatermelonDB's pullChanges). Stable, so every read below
-- uses the one snapshot of the call, and the cursor is that snapshot's xmin: all changes with
-- a lower version are committed and in this pull, the rest come with the next. Records of the
-- device's schema version only; a cursor older than the kept tombstones gets the whole set
-- with experimentalStrategy 'replacement' (the device drops what is not in it).
create or replace function public.sync_pull(
  last_pulled_at bigint default null,
  schema_version integer default null,
  migration jsonb default null
) returns jsonb
language plpgsql stable
set search_path = ''
as $$
declare
  version integer := coalesce(sync_pull.schema_version, private.sync_schema_version());
  upto xid8 := pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot());
  since xid8;
  replacement boolean := false;
  again text[] := '{}'::text[];
  new_tables text[] := '{}'::text[];
  tbl text;
  all_new boolean;
  dropped text[];
  created jsonb;
  updated jsonb;
  changes jsonb := '{}'::jsonb;
begin
  if (select auth.uid()) is null then
    raise exception 'sign in to sync' using errcode = '42501';
  end if;
  -- A full copy of the journal is the user's own to take, as the export is.
  perform private.refuse_while_impersonating('syncing the journal');
  -- One pull per account at a time: a full pull is heavy, and devices retry a 429.
  if not pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtext('sync pull'), pg_catalog.hashtext((select auth.uid())::text)) then
    raise exception 'a pull of this account is under way: try again in a moment' using errcode = 'PT429';
  end if;
  if version not between 1 and private.sync_schema_version() then
    raise exception 'schema_version: this server knows schema versions 1 to %', private.sync_schema_version()
      using errcode = '22023';
  end if;
  if last_pulled_at < 0 then
    raise exception 'last_pulled_at: must be a cursor this server returned, or null' using errcode = '22023';
  end if;
  if last_pulled_at > private.sync_cursor(upto) then
    raise exception 'last_pulled_at: % is ahead of the server (not a timestamp it returned)', last_pulled_at
      using errcode = '22023';
  end if;
  if last_pulled_at > 0 then
    since := private.sync_version(last_pulled_at);
    replacement := since < private.sync_pruned_below();
    again := private.sync_migration_tables(migration, version);
    new_tables := array(select jsonb_array_elements_text(coalesce(migration -> 'tables', '[]')));
  end if;

  for tbl in select distinct s.table_name from private.sync_columns() s where s.since <= version loop
    -- New to the device: created (every record on a first pull, or of a table its migration added).
    -- Known to it (an earlier pull, or its own push): updated.
    all_new := since is null or tbl = any (new_tables);
    dropped := array(select s.column_name from private.sync_columns() s where s.table_name = tbl and s.since > version);
    select coalesce(jsonb_agg(r.record - dropped) filter (where all_new or r.created_version >= since), '[]'),
           coalesce(jsonb_agg(r.record - dropped) filter (where not (all_new or r.created_version >= since)), '[]')
      into created, updated
      from private.sync_records(tbl, case when all_new or replacement or tbl = any (again) then null else since end, upto) r;
    changes := changes || jsonb_build_object(tbl, jsonb_build_object(
      'created', created, 'updated', updated,
      'deleted', case when since is null or replacement then '[]'::jsonb
                      else to_jsonb(private.sync_deleted_ids(tbl, since, upto)) end));
  end loop;

  return jsonb_build_object('changes', changes, 'timestamp', private.sync_cursor(upto))
      || case when replacement then jsonb_build_object('experimentalStrategy', 'replacement') else '{}'::jsonb end;
end
$$;
comment on function public.sync_pull(bigint, integer, jsonb) is
  'WatermelonDB pull: the caller''s notebooks, entries (with their text), goals and check-ins changed since the cursor, and the ids deleted; timestamp is the next cursor (docs/sync.md).';
grant execute on function public.sync_pull(bigint, integer, jsonb) to authenticated;
