-- =============================================================================================
-- Workout windows: the daily mosaic
-- =============================================================================================
-- routes/workout/mosaic.ts. The area's overview: workout/shared.sql.

-- ---------------------------------------------------------------------------------------------
-- The daily mosaic (planned rows): the api function draws the PNG; SQL keeps the record.
-- ---------------------------------------------------------------------------------------------

create table public.workout_mosaics (
  date date primary key,
  image_url text not null check (char_length(image_url) <= 2048),
  object_name text not null check (char_length(object_name) <= 500),
  sections jsonb not null default '[]'::jsonb check (jsonb_typeof(sections) = 'array'),
  total_participants integer not null default 0,
  completed_count integer not null default 0,
  failed_count integer not null default 0,
  pending_count integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
alter table public.workout_mosaics enable row level security;
comment on table public.workout_mosaics is
  'One mosaic image per date: a tile per participant by team and status, with each tile''s coordinates. Readable by signed-in users.';
revoke all on public.workout_mosaics from anon, authenticated;
grant select on public.workout_mosaics to authenticated;

create policy "workout_mosaics: signed-in users read" on public.workout_mosaics
  for select to authenticated using (true);

-- The tiles to draw: every participant of the date by team, then window start.
create or replace function private.workout_mosaic_participants(target date)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins or the scheduler only' using errcode = '42501';
  end if;
  return (select coalesce(jsonb_agg(jsonb_build_object('userId', b.user_id, 'userName', coalesce(p.full_name, 'Participant'),
                                                       'teamColor', b.team_color, 'status', b.status)
                                    order by b.team_color desc, b.start_utc, b.user_id), '[]'::jsonb)
            from private.workout_day_board(target) b join public.profiles p on p.id = b.user_id);
end
$$;
grant execute on function private.workout_mosaic_participants(date) to authenticated, service_role;

create or replace function public.workout_mosaic_participants(target date) returns jsonb
language sql stable set search_path = '' as $$ select private.workout_mosaic_participants(target) $$;
comment on function public.workout_mosaic_participants(date) is 'Super admins, the scheduler: the tiles of a date''s mosaic (red first).';
grant execute on function workout_mosaic_participants(date) to authenticated, service_role;

-- A mosaic as the api shows it.
create or replace function private.mosaic_json(m public.workout_mosaics) returns jsonb
language sql stable
set search_path = ''
as $$
  select jsonb_build_object('imageUrl', m.image_url, 'date', m.date, 'sections', m.sections,
    'stats', jsonb_build_object('totalParticipants', m.total_participants, 'completed', m.completed_count,
                                'failed', m.failed_count, 'pending', m.pending_count),
    'updatedAt', m.updated_at)
$$;

-- Stores (or replaces) a date's mosaic; returns it and the object it replaced (to delete).
create or replace function private.save_workout_mosaic(target date, image_url text, object_name text, sections jsonb)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  old_object text;
  m public.workout_mosaics;
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins or the scheduler only' using errcode = '42501';
  end if;
  select x.object_name into old_object from public.workout_mosaics x where x.date = target for update;
  insert into public.workout_mosaics as x (date, image_url, object_name, sections, total_participants,
    completed_count, failed_count, pending_count)
  select target, image_url, object_name, sections, jsonb_array_length(sections),
         count(*) filter (where s ->> 'status' = 'completed'), count(*) filter (where s ->> 'status' = 'failed'),
         count(*) filter (where s ->> 'status' = 'pending')
    from (select 1) one left join lateral jsonb_array_elements(sections) s on true
  on conflict (date) do update set image_url = excluded.image_url, object_name = excluded.object_name,
    sections = excluded.sections, total_participants = excluded.total_participants,
    completed_count = excluded.completed_count, failed_count = excluded.failed_count,
    pending_count = excluded.pending_count, updated_at = now()
  returning x.* into m;
  return jsonb_build_object('mosaic', private.mosaic_json(m),
                            'replacedObject', case when old_object is distinct from object_name then old_object end);
end
$$;
grant execute on function private.save_workout_mosaic(date,text,text,jsonb) to authenticated, service_role;

create or replace function public.save_workout_mosaic(target date, image_url text, object_name text, sections jsonb)
returns jsonb
language sql set search_path = '' as $$ select private.save_workout_mosaic(target, image_url, object_name, sections) $$;
comment on function public.save_workout_mosaic(date, text, text, jsonb) is 'Super admins, the scheduler: stores a drawn mosaic.';
grant execute on function save_workout_mosaic(date,text,text,jsonb) to authenticated, service_role;
