-- =============================================================================================
-- Offline sync: the push
-- =============================================================================================
-- POST /api/sync (public.sync_push) in WatermelonDB's protocol (docs/sync.md): a device's
-- created, updated and deleted records, applied all or none, as the caller (RLS, grants and
-- every trigger of the tables: validation, visibility, tone analysis, the music link), so a
-- pushed record obeys the same rules as one written through /api or PostgREST. The records'
-- shape: sync_pull.sql (private.sync_columns).

-- A record's field as the tables store it, checked by its kind; errors name table, column and
-- record ("journal_entries.title, record <id>: ..."), as /api names fields.
create or replace function private.sync_value(tbl text, col text, kind text, nullable boolean, rid text, val jsonb)
returns jsonb
language plpgsql immutable
set search_path = ''
as $$
declare
  field text := format('%s.%s, record %s', tbl, col, rid);
  tags jsonb;
begin
  if val is null or jsonb_typeof(val) = 'null' then
    if nullable then
      return 'null'::jsonb;
    end if;
    raise exception '%: required', field using errcode = '22023';
  end if;
  if kind = 'bool' then
    return val; -- only server-kept columns have this kind: read, never written
  end if;
  if jsonb_typeof(val) <> 'string' then
    raise exception '%: must be a string', field using errcode = '22023';
  end if;
  if kind = 'uuid' and val #>> '{}' !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
    raise exception '%: must be a UUID', field using errcode = '22023';
  end if;
  if kind = 'date' then
    begin
      if val #>> '{}' !~ '^\d{4}-\d{2}-\d{2}$' or (val #>> '{}')::date::text <> val #>> '{}' then
        raise exception using errcode = '22007';
      end if;
    exception when others then
      raise exception '%: must be a date (YYYY-MM-DD)', field using errcode = '22023';
    end;
  end if;
  if kind = 'tags' then
    begin
      tags := (val #>> '{}')::jsonb;
    exception when others then
      raise exception '%: must be a JSON array of strings in a string', field using errcode = '22023';
    end;
    if jsonb_typeof(tags) <> 'array' or exists (select 1 from jsonb_array_elements(tags) t where jsonb_typeof(t) <> 'string') then
      raise exception '%: must be a JSON array of strings in a string', field using errcode = '22023';
    end if;
    -- As /api: trimmed, each once, in their order.
    return coalesce((select jsonb_agg(t order by first) from (
      select pg_catalog.btrim(t) as t, min(n) as first
        from jsonb_array_elements_text(tags) with ordinality as x(t, n) group by pg_catalog.btrim(t)) y), '[]');
  end if;
  -- As /api: titles and names trimmed, moods trimmed and lower-cased.
  if col in ('title', 'name') then
    return to_jsonb(pg_catalog.btrim(val #>> '{}'));
  end if;
  if col = 'mood' then
    return to_jsonb(nullif(pg_catalog.lower(pg_catalog.btrim(val #>> '{}')), ''));
  end if;
  return val;
end
$$;
grant execute on function private.sync_value(text, text, text, boolean, text, jsonb) to authenticated;

-- One pushed record: its writable fields as stored (the server's own columns ignored, and
-- WatermelonDB's _status and _changed); unknown columns and another owner are refused.
-- columns: the table's rows of private.sync_columns() as JSON, read once per push.
create or replace function private.sync_fields(tbl text, rec jsonb, columns jsonb) returns jsonb
language plpgsql stable
set search_path = ''
as $$
declare
  rid text := rec ->> 'id';
  unknown text;
  fields jsonb;
begin
  select k into unknown from jsonb_object_keys(rec) k
   where k not in ('_status', '_changed')
     and not exists (select 1 from jsonb_array_elements(columns) s where s ->> 'column_name' = k)
   limit 1;
  if unknown is not null then
    raise exception '%.%, record %: not a synced column', tbl, unknown, rid using errcode = '22023';
  end if;
  -- An empty user_id (WatermelonDB fills a string column with '') is the caller's own.
  if coalesce(rec ->> 'user_id', '') <> '' and lower(rec ->> 'user_id') is distinct from (select auth.uid())::text then
    raise exception '%.user_id, record %: a record may only be your own', tbl, rid using errcode = '42501';
  end if;
  -- Plain text and nulls as they come; what needs a check or a conversion through sync_value.
  select coalesce(jsonb_object_agg(s.column_name,
           case when jsonb_typeof(rec -> s.column_name) = 'null' and s.nullable then 'null'::jsonb
                when s.kind = 'text' and jsonb_typeof(rec -> s.column_name) = 'string'
                     and s.column_name not in ('title', 'name', 'mood') then rec -> s.column_name
                else private.sync_value(tbl, s.column_name, s.kind, s.nullable, rid, rec -> s.column_name) end),
           '{}'::jsonb)
    into fields
    from jsonb_to_recordset(columns) as s(column_name text, kind text, writable boolean, nullable boolean)
   where s.writable and rec ? s.column_name;
  return fields;
end
$$;
grant execute on function private.sync_fields(text, jsonb, jsonb) to authenticated;

-- The pushed ids' rows as they are, whoever owns them (security definer: a row the caller may
-- not read is still refused by name, never created twice): owner, version, the writable
-- fields as stored (the owner's rows only), and the version of a tombstone of the id.
create or replace function private.sync_current_rows(tbl text, ids uuid[])
returns table (id uuid, user_id uuid, row_version xid8, fields jsonb, mood_detected boolean, deleted_version xid8)
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
begin
  return query
    with rows as (
      select n.id, n.user_id, n.row_version, jsonb_build_object(
               'name', n.name, 'metadata_visibility', n.metadata_visibility, 'content_visibility', n.content_visibility,
               'team_id', n.team_id, 'org_id', n.org_id) as fields, false as mood_detected
        from public.notebooks n where tbl = 'notebooks' and n.id = any (ids)
      union all
      select e.id, e.user_id, e.row_version, jsonb_build_object(
               'notebook_id', e.notebook_id, 'title', e.title, 'content', coalesce(c.content, ''), 'mood', e.mood,
               'tags', to_jsonb(e.tags), 'metadata_visibility', e.metadata_visibility,
               'content_visibility', e.content_visibility, 'team_id', e.team_id, 'org_id', e.org_id), e.mood_detected
        from public.journal_entries e left join public.journal_entry_contents c on c.entry_id = e.id
       where tbl = 'journal_entries' and e.id = any (ids)
      union all
      select g.id, g.user_id, g.row_version, jsonb_build_object(
               'title', g.title, 'description', g.description, 'target_date', g.target_date, 'status', g.status), false
        from public.goals g where tbl = 'goals' and g.id = any (ids)
      union all
      select k.id, k.user_id, k.row_version, jsonb_build_object(
               'goal_id', k.goal_id, 'status', k.status, 'notes', k.notes), false
        from public.goal_check_ins k where tbl = 'goal_check_ins' and k.id = any (ids))
    select i.id, r.user_id, r.row_version, case when r.user_id = me then r.fields end, r.mood_detected,
           (select t.row_version from private.sync_tombstones t where t.table_name = tbl and t.id = i.id and t.user_id = me)
      from unnest(ids) as i(id)
      left join rows r on r.id = i.id;
end
$$;
revoke all on function private.sync_current_rows(text, uuid[]) from public;
grant execute on function private.sync_current_rows(text, uuid[]) to authenticated;

-- The most records one push may carry: a device with more pushes in turns (docs/sync.md).
create or replace function private.sync_push_max_records() returns integer
language sql immutable
set search_path = ''
as $$ select 2000 $$;
grant execute on function private.sync_push_max_records() to authenticated;

-- Checks the document's shape: {table: {created: [], updated: [], deleted: []}}, known tables,
-- records with a UUID id, each id once per table.
create or replace function private.sync_check_changes(changes jsonb) returns void
language plpgsql immutable
set search_path = ''
as $$
declare
  tbl text;
  lists jsonb;
  k text;
  item jsonb;
begin
  if changes is null or jsonb_typeof(changes) <> 'object' then
    raise exception 'changes: must be an object {table: {created, updated, deleted}}' using errcode = '22023';
  end if;
  if (select count(*) from jsonb_each(changes) c, jsonb_each(case when jsonb_typeof(c.value) = 'object' then c.value else '{}' end) l
       , jsonb_array_elements(case when jsonb_typeof(l.value) = 'array' then l.value else '[]' end) r) > private.sync_push_max_records() then
    raise exception 'changes: at most % records per push (push the rest after)', private.sync_push_max_records()
      using errcode = '22023';
  end if;
  for tbl, lists in select * from jsonb_each(changes) loop
    if not exists (select 1 from private.sync_columns() s where s.table_name = tbl) then
      raise exception 'changes.%: not a synced table', tbl using errcode = '22023';
    end if;
    if jsonb_typeof(lists) <> 'object' then
      raise exception 'changes.%: must be an object {created, updated, deleted}', tbl using errcode = '22023';
    end if;
    for k in select jsonb_object_keys(lists) loop
      if k not in ('created', 'updated', 'deleted') or jsonb_typeof(lists -> k) <> 'array' then
        raise exception 'changes.%.%: only created, updated and deleted, each an array', tbl, k using errcode = '22023';
      end if;
    end loop;
    for item in select jsonb_array_elements(coalesce(lists -> 'created', '[]')) union all
                select jsonb_array_elements(coalesce(lists -> 'updated', '[]')) loop
      if jsonb_typeof(item) <> 'object' then
        raise exception 'changes.%: each created or updated record must be an object', tbl using errcode = '22023';
      end if;
      if jsonb_typeof(item -> 'id') is distinct from 'string'
         or item ->> 'id' !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
        raise exception 'changes.%.id: every record needs its id, a UUID', tbl using errcode = '22023';
      end if;
    end loop;
    for item in select jsonb_array_elements(coalesce(lists -> 'deleted', '[]')) loop
      if jsonb_typeof(item) <> 'string' or item #>> '{}' !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
        raise exception 'changes.%.deleted: each item must be an id (a UUID)', tbl using errcode = '22023';
      end if;
    end loop;
    if (select count(*) <> count(distinct lower(x)) from (
          select jsonb_array_elements(coalesce(lists -> 'created', '[]')) ->> 'id' as x union all
          select jsonb_array_elements(coalesce(lists -> 'updated', '[]')) ->> 'id' union all
          select jsonb_array_elements_text(coalesce(lists -> 'deleted', '[]'))) ids) then
      raise exception 'changes.%: an id appears twice', tbl using errcode = '22023';
    end if;
  end loop;
end
$$;
grant execute on function private.sync_check_changes(jsonb) to authenticated;

-- POST /api/sync: applies a device's changes (WatermelonDB's pushChanges), all or none.
-- Refused with 409 (PT409, hint sync_conflict, detail: the records by table) when a record
-- changed on the server at or after last_pulled_at, unless the device already has what the
-- server has (a retried push): the device pulls, resolves and pushes again. Pushes of one
-- user run one at a time, so a retry racing its original finds it applied.
create or replace function public.sync_push(changes jsonb, last_pulled_at bigint)
returns jsonb
language plpgsql
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  since xid8;
  tbl text;
  fields jsonb;
  cur record;
  columns jsonb;
  same boolean;
  plan jsonb[] := '{}'::jsonb[]; -- appended in place (a jsonb array would be copied whole on each append)
  op jsonb;
  conflicts jsonb := '{}'::jsonb;
  unchanged integer := 0;
  counts jsonb := '{}'::jsonb;
  n integer;
  cols text;
  err_state text;
  err_message text;
  err_hint text;
  err_detail text;
  field_message text[];
begin
  if me is null then
    raise exception 'sign in to sync' using errcode = '42501';
  end if;
  if last_pulled_at is null or last_pulled_at <= 0 then
    raise exception 'last_pulled_at: a push needs the timestamp of the pull before it' using errcode = '22023';
  end if;
  if last_pulled_at > private.sync_cursor(pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())) then
    raise exception 'last_pulled_at: % is ahead of the server (not a timestamp it returned)', last_pulled_at
      using errcode = '22023';
  end if;
  perform private.sync_check_changes(changes);
  since := private.sync_version(last_pulled_at);
  perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('sync push'), pg_catalog.hashtext(me::text));
  if since < private.sync_pruned_below() then
    raise exception 'pull first: this device''s copy is older than the deletions the server keeps'
      using errcode = 'PT409', hint = 'sync_conflict', detail = '{}';
  end if;

  -- What each record asks for, against the rows as they are: nothing (the server has it
  -- already), a write, or a conflict.
  for tbl in select t from unnest(array['notebooks', 'goals', 'journal_entries', 'goal_check_ins']) t where changes ? t loop
    columns := (select jsonb_agg(to_jsonb(s)) from private.sync_columns() s where s.table_name = tbl);
    for cur in
      select x.kind, x.rec, r.*
        from (select 'upsert' as kind, r as rec from jsonb_array_elements(coalesce(changes -> tbl -> 'created', '[]')
                                                                          || coalesce(changes -> tbl -> 'updated', '[]')) r
              union all
              select 'delete', to_jsonb(d) from jsonb_array_elements_text(coalesce(changes -> tbl -> 'deleted', '[]')) d) x
        join private.sync_current_rows(tbl, array(
               select lower(coalesce(i ->> 'id', i #>> '{}'))::uuid
                 from jsonb_array_elements(coalesce(changes -> tbl -> 'created', '[]') || coalesce(changes -> tbl -> 'updated', '[]')
                                           || coalesce(changes -> tbl -> 'deleted', '[]')) i)) r
          on r.id = lower(coalesce(x.rec ->> 'id', x.rec #>> '{}'))::uuid
    loop
      if cur.user_id is not null and cur.user_id <> me then
        -- The id is another user's now. This device's own record of it was deleted: learnt by a
        -- pull (a conflict until then), or already known and nothing to do. A deletion of
        -- someone else's id changes nothing, in the same words as a missing one.
        if cur.deleted_version >= since then
          conflicts := jsonb_set(conflicts, array[tbl], coalesce(conflicts -> tbl, '[]') || to_jsonb(cur.id));
          continue;
        elsif cur.deleted_version is not null or cur.kind = 'delete' then
          unchanged := unchanged + 1;
          continue;
        end if;
        raise exception '%.id, record %: belongs to another user', tbl, cur.id using errcode = '42501';
      end if;
      if cur.kind = 'delete' then
        if cur.user_id is not null and tbl = 'goal_check_ins'
           and not exists (select 1 from jsonb_array_elements_text(coalesce(changes -> 'goals' -> 'deleted', '[]')) g
                            where lower(g) = cur.fields ->> 'goal_id') then
          raise exception 'goal_check_ins, record %: a check-in is kept as it was made (deleting its goal removes it)', cur.id
            using errcode = '42501';
        end if;
        if cur.user_id is null or tbl = 'goal_check_ins' then
          unchanged := unchanged + 1; -- gone already (a retry, or deleted elsewhere), or goes with its goal
        elsif cur.row_version >= since then
          conflicts := jsonb_set(conflicts, array[tbl], coalesce(conflicts -> tbl, '[]') || to_jsonb(cur.id));
        else
          plan := array_append(plan, jsonb_build_object('op', 'delete', 'table', tbl, 'id', cur.id, 'version', cur.row_version::text));
        end if;
        continue;
      end if;
      fields := private.sync_fields(tbl, cur.rec, columns);
      if cur.user_id is null then
        if cur.deleted_version >= since then
          conflicts := jsonb_set(conflicts, array[tbl], coalesce(conflicts -> tbl, '[]') || to_jsonb(cur.id));
        else
          plan := array_append(plan, jsonb_build_object('op', 'insert', 'table', tbl, 'id', cur.id, 'fields', fields));
        end if;
        continue;
      end if;
      -- The server has what the device sends (a null mood matches one tone analysis chose).
      same := not exists (
        select 1 from jsonb_each(fields) f
         where f.value is distinct from cur.fields -> f.key
           and not (f.key = 'mood' and f.value = 'null' and cur.mood_detected));
      if same then
        unchanged := unchanged + 1;
      elsif cur.row_version >= since then
        conflicts := jsonb_set(conflicts, array[tbl], coalesce(conflicts -> tbl, '[]') || to_jsonb(cur.id));
      elsif tbl = 'goal_check_ins' then
        raise exception 'goal_check_ins, record %: a check-in is kept as it was made (make a new one)', cur.id
          using errcode = '42501';
      else
        plan := array_append(plan, jsonb_build_object('op', 'update', 'table', tbl, 'id', cur.id, 'fields', fields,
                                           'version', cur.row_version::text));
      end if;
    end loop;
  end loop;
  if conflicts <> '{}' then
    raise exception 'pull first: changed on the server since last_pulled_at: %',
      (select string_agg(key || ' ' || (select string_agg(v, ', ') from jsonb_array_elements_text(value) v), '; ')
         from jsonb_each(conflicts))
      using errcode = 'PT409', hint = 'sync_conflict', detail = conflicts::text;
  end if;

  -- Writes: parents before children; deletions children first. A row changed since it was
  -- read above (by another path; our own transaction's changes count as read) is a conflict.
  -- One exception block for all of them: an error names the record it stopped at.
  begin
  for op in
    select p from unnest(plan) p
     order by case when p ->> 'op' = 'delete' then 1 else 0 end,
              case when p ->> 'op' = 'delete'
                   then array_position(array['journal_entries', 'notebooks', 'goals', 'goal_check_ins'], p ->> 'table')
                   else array_position(array['notebooks', 'goals', 'journal_entries', 'goal_check_ins'], p ->> 'table') end
  loop
    tbl := op ->> 'table';
    fields := coalesce(op -> 'fields', '{}') - 'content';
    cols := (select string_agg(format('%I', k), ', ') from jsonb_object_keys(fields) k);
    if op ->> 'op' = 'insert' then
      execute format('insert into public.%I (id%s) select $2%s from jsonb_populate_record(null::public.%I, $1) r',
                     tbl, coalesce(', ' || cols, ''),
                     coalesce(', ' || (select string_agg(format('r.%I', k), ', ') from jsonb_object_keys(fields) k), ''), tbl)
        using fields, (op ->> 'id')::uuid;
      n := 1;
    elsif op ->> 'op' = 'update' then
      n := 1;
      if cols is not null then
        execute format('update public.%I t set (%s) = (select %s from jsonb_populate_record(null::public.%I, $1) r)
                         where t.id = $2 and (t.row_version = $3 or t.row_version = pg_catalog.pg_current_xact_id())',
                       tbl, cols, (select string_agg(format('r.%I', k), ', ') from jsonb_object_keys(fields) k), tbl)
          using fields, (op ->> 'id')::uuid, (op ->> 'version')::xid8;
        get diagnostics n = row_count;
      end if;
    else
      execute format('delete from public.%I t where t.id = $1 and (t.row_version = $2 or t.row_version = pg_catalog.pg_current_xact_id())', tbl)
        using (op ->> 'id')::uuid, (op ->> 'version')::xid8;
      get diagnostics n = row_count;
      if n = 0 and exists (select 1 from private.sync_current_rows(tbl, array[(op ->> 'id')::uuid]) r where r.user_id is null) then
        n := 1; -- gone with its parent, deleted in this push
      end if;
    end if;
    if n = 0 then
      raise exception 'pull first: changed on the server since last_pulled_at: % %', tbl, op ->> 'id'
        using errcode = 'PT409', hint = 'sync_conflict', detail = jsonb_build_object(tbl, jsonb_build_array(op ->> 'id'))::text;
    end if;
    -- An entry always has its text row, as create_journal_entry makes it (tone analysis starts there).
    if tbl = 'journal_entries' and (op -> 'fields' ? 'content' or op ->> 'op' = 'insert') then
      insert into public.journal_entry_contents as c (entry_id, content)
      values ((op ->> 'id')::uuid, coalesce(op -> 'fields' ->> 'content', ''))
      on conflict (entry_id) do update set content = excluded.content where c.content is distinct from excluded.content;
    end if;
    counts := jsonb_set(counts, array[tbl], coalesce(counts -> tbl, '{}')
                || jsonb_build_object(op ->> 'op', coalesce((counts -> tbl ->> (op ->> 'op'))::integer, 0) + 1));
  end loop;
  exception when others then
      get stacked diagnostics err_state = returned_sqlstate, err_message = message_text, err_hint = pg_exception_hint,
                              err_detail = pg_exception_detail;
      if err_state = 'PT409' then
        raise exception using errcode = err_state, message = err_message, hint = err_hint, detail = err_detail;
      end if;
      -- "field: words" from a check names the field; anything else names the record.
      field_message := pg_catalog.regexp_match(err_message, '^([a-z_]+): (.*)$');
      raise exception using
        errcode = case when err_state in ('42501', 'PT404') then '42501'
                       when err_state like '23%' or err_state like '22%' then '22023' else err_state end,
        message = case when field_message is not null
                       then format('%s.%s, record %s: %s', tbl, field_message[1], op ->> 'id', field_message[2])
                       else format('%s, record %s: %s', tbl, op ->> 'id', err_message) end,
        hint = coalesce(err_hint, ''), detail = coalesce(err_detail, '');
  end;
  return jsonb_build_object('applied', counts, 'unchanged', unchanged);
end
$$;
comment on function public.sync_push(jsonb, bigint) is
  'WatermelonDB push: the caller''s created, updated and deleted records, all or none; 409 (sync_conflict) when one changed since last_pulled_at (docs/sync.md).';
grant execute on function public.sync_push(jsonb, bigint) to authenticated;
