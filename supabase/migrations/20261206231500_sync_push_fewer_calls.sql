-- A push of 500 records spent half its time in 7,000 calls of private.sync_columns (about 0.1 ms
-- each: a function with its own search_path is never inlined) and a further fifth re-copying
-- its plan, a jsonb array appended to once per record (scripts/bench/sync.ts: 1.5 s to 0.6 s
-- in SQL). sync_fields now reads the column list once per record, and sync_push keeps its plan
-- in a jsonb[] (appended in place).

create or replace function private.sync_fields(tbl text, rec jsonb) returns jsonb
language plpgsql stable
set search_path = ''
as $$
declare
  rid text := rec ->> 'id';
  unknown text;
  c record;
  fields jsonb := '{}';
begin
  -- One read of the column list per record (sync_columns costs a call each time, not inlined).
  select k into unknown from jsonb_object_keys(rec) k
   where k not in ('_status', '_changed')
     and k not in (select s.column_name from private.sync_columns() s where s.table_name = tbl)
   limit 1;
  if unknown is not null then
    raise exception '%.%, record %: not a synced column', tbl, unknown, rid using errcode = '22023';
  end if;
  if rec ? 'user_id' and rec -> 'user_id' is distinct from to_jsonb((select auth.uid())::text) then
    raise exception '%.user_id, record %: a record may only be your own', tbl, rid using errcode = '42501';
  end if;
  for c in select * from private.sync_columns() s where s.table_name = tbl and s.writable and rec ? s.column_name loop
    fields := fields || jsonb_build_object(c.column_name,
                private.sync_value(tbl, c.column_name, c.kind, c.nullable, rid, rec -> c.column_name));
  end loop;
  return fields;
end
$$;

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
  same boolean;
  plan jsonb[] := '{}'; -- appended in place (a jsonb array would be copied whole on each append)
  op jsonb;
  conflicts jsonb := '{}';
  unchanged integer := 0;
  counts jsonb := '{}';
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
        raise exception '%.id, record %: belongs to another user', tbl, cur.id using errcode = '42501';
      end if;
      if cur.kind = 'delete' then
        if cur.user_id is not null and tbl = 'goal_check_ins'
           and not coalesce(changes -> 'goals' -> 'deleted', '[]') ? (cur.fields ->> 'goal_id') then
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
      fields := private.sync_fields(tbl, cur.rec);
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
