-- =============================================================================================
-- Workout windows: check-ins
-- =============================================================================================
-- Photos the api registered, reading the day (chains, squads, team stats, check-ins) and
-- writing a check-in (routes/workout/chains.ts, checkin_form.ts). The area's overview:
-- workout/shared.sql.

-- ---------------------------------------------------------------------------------------------
-- Photos the api read and stored
-- ---------------------------------------------------------------------------------------------

-- The check-in trusts no client fact. The api reads the photo (capture time, GPS), strips and
-- stores it with the service role, and records what it read in private.workout_photos, keyed
-- by the storage object; public.workout_checkin takes only that object (and the optional
-- position of the SPEC's form), which must be one the api registered for the caller, still in
-- the bucket and not used by another check-in. EXIF stays a claim the client controls, so a
-- check-in verifies automatically only when the capture time is in the window (± 30 min), the
-- position within 50 km, the server received the photo inside the window (± 30 min), the
-- capture is no later than the receipt (5 min of clock skew) and at most 120 minutes before
-- it, and its picture is new: its 64-bit difference hash (computed by the api from the
-- decoded, upright picture) is more than 7 bits from that of every photo that served a
-- check-in before, anyone's (a match waits for review, never refused; so does a picture too
-- plain to hash). Otherwise it waits for review with the first reason that failed.
--
-- A time-zone change applies from the next local day: a check-in needs a later date than the
-- user's latest check-in, and comes after that check-in's day has ended in the zone it was
-- counted in (stored on the check-in). A user's check-ins run one at a time (an advisory
-- lock), so the rule holds under concurrency.

-- The photo rules a check-in is held to (the numbers above).
create or replace function private.workout_photo_rules() returns jsonb
language sql immutable
set search_path = ''
as $$ select '{"graceMinutes": 30, "maxDistanceKm": 50, "maxPhotoAgeMinutes": 120, "clockSkewMinutes": 5, "samePictureBits": 7}'::jsonb $$;
comment on function private.workout_photo_rules() is
  'Photo validation: grace around the window (capture and receipt), distance from the user''s location, how long '
  'before its receipt a photo may be taken, how far a camera clock may run ahead, and within how many bits of 64 '
  'two pictures'' difference hashes count as the same picture.';

create table private.workout_photos (
  object_name text primary key check (char_length(object_name) <= 500),
  user_id uuid not null references public.profiles (id) on delete cascade,
  photo_url text not null check (char_length(photo_url) <= 2048),
  dhash bigint,
  dhash_as_sent bigint,
  taken_local timestamp,
  offset_minutes integer check (offset_minutes between -840 and 840),
  latitude numeric(10, 8) check (latitude between -90 and 90),
  longitude numeric(11, 8) check (longitude between -180 and 180),
  received_at timestamptz not null default now(),
  checkin_id uuid unique references public.workout_checkins (id) on delete cascade
);
alter table private.workout_photos enable row level security;
comment on table private.workout_photos is
  'Check-in photos the api stored (bucket workout-checkins, metadata stripped), with what it read from the original '
  'file (EXIF capture time and offset, GPS), when the server received it and the 64-bit difference hash of its '
  'picture. Written only by private.register_workout_photo (service role); claimed once by a check-in.';
comment on column private.workout_photos.dhash is
  'dHash of the upright picture (grey, 9x8, left brighter than right), as a signed 64-bit integer; null when the '
  'picture is too plain to compare. Near-identical pictures differ in a few bits.';
comment on column private.workout_photos.dhash_as_sent is
  'dHash of the picture as sent, before its EXIF orientation turned it (null unless it did): compared too, so a '
  'stored photo given an orientation tag is still the same picture.';

create index workout_photos_by_user on private.workout_photos (user_id, received_at);

-- Finding the used pictures within 7 bits of a hash: split into four 16-bit bands, two hashes
-- within 7 bits agree on some band to within one bit (else each band differs in 2 or more),
-- so each band's value and its 16 one-bit neighbours are looked up (68 index probes, each
-- matching about n/65,536 rows) and the candidates' full distance is computed from the index
-- itself (it carries the hash: index-only scans). Measured on 2,000,000 random hashes: about
-- 2,100 candidates, 0.3-0.6 ms.
create index workout_photos_used_band_0 on private.workout_photos (((dhash >> 48) & 65535)) include (dhash) where checkin_id is not null;

create index workout_photos_used_band_1 on private.workout_photos (((dhash >> 32) & 65535)) include (dhash) where checkin_id is not null;

create index workout_photos_used_band_2 on private.workout_photos (((dhash >> 16) & 65535)) include (dhash) where checkin_id is not null;

create index workout_photos_used_band_3 on private.workout_photos ((dhash & 65535)) include (dhash) where checkin_id is not null;

-- POST /api/workout-window/checkin, after storing the stripped photo: records what the api read
-- from the original. The service role only (a direct database session too): the facts are the
-- server's, never a client's.
create or replace function private.register_workout_photo(
  object_name text, owner_id uuid, photo_url text, dhash bigint, dhash_as_sent bigint,
  taken_local timestamp, offset_minutes integer, latitude numeric, longitude numeric
) returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  if coalesce(private.request_role(), 'service_role') <> 'service_role' then
    raise exception 'photos are registered by the api only' using errcode = '42501';
  end if;
  if $1 is null or $2 is null or $1 not like $2::text || '/%'
     or not exists (select 1 from storage.objects o where o.bucket_id = 'workout-checkins' and o.name = $1) then
    raise exception 'photo: % is not a stored object in its owner''s folder of workout-checkins', $1 using errcode = '22023';
  end if;
  -- A refused check-in leaves its registration behind (its object is deleted); forget the
  -- owner's unused ones after a day.
  delete from private.workout_photos p
   where p.user_id = $2 and p.checkin_id is null and p.received_at < now() - interval '1 day';
  insert into private.workout_photos (object_name, user_id, photo_url, dhash, dhash_as_sent, taken_local, offset_minutes,
                                      latitude, longitude)
  values ($1, $2, $3, $4, $5, $6, $7, $8, $9);
end
$$;
comment on function private.register_workout_photo(text, uuid, text, bigint, bigint, timestamp, integer, numeric, numeric) is
  'The api (service role): records a stored check-in photo with the facts it read from the original file.';
grant execute on function private.register_workout_photo(text,uuid,text,bigint,bigint,timestamp without time zone,integer,numeric,numeric) to service_role;

create or replace function public.register_workout_photo(
  object_name text, owner_id uuid, photo_url text, dhash bigint, dhash_as_sent bigint,
  taken_local timestamp default null, offset_minutes integer default null,
  latitude numeric default null, longitude numeric default null
) returns void
language sql
set search_path = ''
as $$ select private.register_workout_photo(object_name, owner_id, photo_url, dhash, dhash_as_sent, taken_local, offset_minutes,
                                            latitude, longitude) $$;
comment on function public.register_workout_photo(text, uuid, text, bigint, bigint, timestamp, integer, numeric, numeric) is
  'Service role only (the api): records a check-in photo it stored and read; clients cannot call it.';
grant execute on function register_workout_photo(text,uuid,text,bigint,bigint,timestamp without time zone,integer,numeric,numeric) to service_role;

-- Whether a picture within samePictureBits (at most 7: see the band indexes) of this dHash
-- already served a check-in, anyone's.
create or replace function private.workout_picture_used(hash bigint) returns boolean
language plpgsql stable
set search_path = ''
as $$
declare
  near_0 bigint[];
  near_1 bigint[];
  near_2 bigint[];
  near_3 bigint[];
begin
  -- Each band's value and its 16 one-bit neighbours.
  select array_agg(((hash >> 48) & 65535) # flip), array_agg(((hash >> 32) & 65535) # flip),
         array_agg(((hash >> 16) & 65535) # flip), array_agg((hash & 65535) # flip)
    into near_0, near_1, near_2, near_3
    from (select 0::bigint as flip union all select 1::bigint << b from generate_series(0, 15) b) flips;
  -- One index-only scan per band (a union, not an OR, which would need the table's rows).
  return exists (
    select 1
      from (select p.dhash from private.workout_photos p where p.checkin_id is not null and ((p.dhash >> 48) & 65535) = any (near_0)
            union all
            select p.dhash from private.workout_photos p where p.checkin_id is not null and ((p.dhash >> 32) & 65535) = any (near_1)
            union all
            select p.dhash from private.workout_photos p where p.checkin_id is not null and ((p.dhash >> 16) & 65535) = any (near_2)
            union all
            select p.dhash from private.workout_photos p where p.checkin_id is not null and (p.dhash & 65535) = any (near_3)) candidates
     where bit_count((candidates.dhash # hash)::bit(64)) <= (private.workout_photo_rules() ->> 'samePictureBits')::integer);
end
$$;
comment on function private.workout_picture_used(bigint) is
  'True when a photo whose picture is within samePictureBits of this dHash already served a check-in.';

-- ---------------------------------------------------------------------------------------------
-- Reading check-ins: locations and review reasons for their owner and super admins only
-- ---------------------------------------------------------------------------------------------

create or replace function private.workout_checkin_json(k public.workout_checkins, full_view boolean)
returns jsonb
language sql stable
set search_path = ''
as $$
  select jsonb_build_object(
    'id', k.id, 'userId', k.user_id, 'chainId', k.chain_id, 'date', k.date, 'activityType', k.activity_type,
    'photoUrl', k.photo_url, 'photoTimestamp', k.photo_timestamp,
    'locationLat', case when full_view then k.location_lat end,
    'locationLng', case when full_view then k.location_lng end,
    'status', k.status, 'reviewReason', case when full_view then k.review_reason end,
    'chainContinued', k.chain_continued, 'streakDays', k.streak_days,
    'battleChipsEarned', k.battle_chips_earned, 'createdAt', k.created_at)
$$;
-- A check-in as the caller may see it (location and review reason for its owner and super admins).
create or replace function private.workout_checkin_json(k public.workout_checkins)
returns jsonb
language sql stable
set search_path = ''
as $$ select private.workout_checkin_json(k, k.user_id = (select auth.uid()) or private.is_trusted_caller()) $$;
comment on function private.workout_checkin_json(public.workout_checkins, boolean) is
  'A check-in as the api shows it; without full_view (another user) its location and review reason are null.';
comment on function private.workout_checkin_json(public.workout_checkins) is
  'A check-in as the caller may see it: its location and review reason for its owner and trusted callers only.';

-- Day status of a user on a date (SPEC): completed (a check-in that is not rejected),
-- not_started (before the window), pending (during it), failed (after it, no check-in).
create or replace function private.workout_day_status(target_user uuid, target date, at timestamptz default now())
returns text
language sql stable
set search_path = ''
as $$
  select case
    when exists (select 1 from public.workout_checkins k
                  where k.user_id = target_user and k.date = target and k.status <> 'rejected') then 'completed'
    when w.user_id is null then 'not_started'
    when at < private.workout_window_start(target, w.window_start_time, w.timezone) then 'not_started'
    when at < private.workout_window_start(target, w.window_start_time, w.timezone) + interval '2 hours' then 'pending'
    else 'failed' end
    from (select 1) one
    left join public.workout_windows w on w.user_id = target_user
$$;

-- A squad with its members as others may see them (never a location).
create or replace function private.workout_squad_json(target_squad uuid)
returns jsonb
language sql stable security definer
set search_path = ''
as $$
  select jsonb_build_object('id', s.id, 'date', s.date, 'teamColor', s.team_color,
           'user1', private.workout_user_card(s.user_1_id),
           'user2', private.workout_user_card(s.user_2_id),
           'user3', private.workout_user_card(s.user_3_id))
    from public.workout_squads s where s.id = target_squad
$$;

-- The check-ins of some users on a date (chains and squads): others' check-ins without location
-- or review reason.
create or replace function private.workout_checkins_of(users uuid[], target date)
returns jsonb
language sql stable security definer
set search_path = ''
as $$
  with viewer as (select (select auth.uid()) as me, private.is_trusted_caller() as trusted)
  select coalesce(jsonb_agg(private.workout_checkin_json(k, k.user_id = v.me or v.trusted) order by k.created_at, k.id), '[]'::jsonb)
    from public.workout_checkins k cross join viewer v
   where k.user_id = any (users) and k.date = target
$$;

-- The caller's chain on a date: neighbours, team, squad and their check-ins.
create or replace function private.workout_chain(target date)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  c public.workout_chains;
begin
  if me is null then
    raise exception 'sign in to read chains' using errcode = '42501';
  end if;
  select * into c from public.workout_chains where user_id = me and date = target;
  if not found then
    raise exception 'no chain for % yet (set up a window, then generate chains)', target using errcode = 'PT404';
  end if;
  return jsonb_build_object(
    'chain', jsonb_build_object(
      'id', c.id, 'date', c.date,
      'beforeUser', private.workout_user_card(c.before_user_id),
      'currentUser', private.workout_user_card(c.user_id),
      'afterUser', private.workout_user_card(c.after_user_id),
      'teamColor', c.team_color,
      'squad', private.workout_squad_json(c.squad_id)),
    'checkins', private.workout_checkins_of(array_remove(array[c.before_user_id, c.user_id, c.after_user_id], null), target));
end
$$;
grant execute on function private.workout_chain(date) to authenticated;

create or replace function public.workout_chain(target date) returns jsonb
language sql stable set search_path = '' as $$ select private.workout_chain(target) $$;
comment on function public.workout_chain(date) is 'The caller''s chain on a date: neighbours, team, squad and their check-ins.';
grant execute on function workout_chain(date) to authenticated, service_role;

-- The caller's squad on a date and its check-ins.
create or replace function private.workout_squad(target date)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  s public.workout_squads;
begin
  if me is null then
    raise exception 'sign in to read squads' using errcode = '42501';
  end if;
  select q.* into s from public.workout_chains c join public.workout_squads q on q.id = c.squad_id
   where c.user_id = me and c.date = target;
  if not found then
    raise exception 'no squad for you on %', target using errcode = 'PT404';
  end if;
  return jsonb_build_object(
    'squad', private.workout_squad_json(s.id),
    'checkins', private.workout_checkins_of(array_remove(array[s.user_1_id, s.user_2_id, s.user_3_id], null), target));
end
$$;
grant execute on function private.workout_squad(date) to authenticated;

create or replace function public.workout_squad(target date) returns jsonb
language sql stable set search_path = '' as $$ select private.workout_squad(target) $$;
comment on function public.workout_squad(date) is 'The caller''s squad on a date and its check-ins.';
grant execute on function workout_squad(date) to authenticated, service_role;

-- Each participant of a date with team and day status (the team stats, the mosaic, admin teams).
create or replace function private.workout_day_board(target date, at timestamptz default now())
returns table (user_id uuid, team_color text, squad_id uuid, status text, chips integer, start_utc timestamptz)
language sql stable
set search_path = ''
as $$
  select c.user_id, c.team_color, c.squad_id,
         case when k.status is not null and k.status <> 'rejected' then 'completed'
              when w.user_id is null then 'pending'
              when at >= ((target + w.window_start_time) at time zone w.timezone) + interval '2 hours' then 'failed'
              else 'pending' end,
         case when k.status is not null and k.status <> 'rejected' then k.battle_chips_earned else 0 end,
         (target + w.window_start_time) at time zone w.timezone
    from public.workout_chains c
    left join public.workout_windows w on w.user_id = c.user_id
    left join public.workout_checkins k on k.user_id = c.user_id and k.date = target
   where c.date = target
$$;

-- Per team on a date: members, completed, failed, pending, completion rate and chips.
create or replace function private.workout_team_stats(target date)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if (select auth.uid()) is null and not private.is_trusted_caller() then
    raise exception 'sign in to read team stats' using errcode = '42501';
  end if;
  return (
    select jsonb_object_agg(t.team || 'Team', jsonb_build_object(
             'totalMembers', coalesce(s.total, 0), 'completed', coalesce(s.completed, 0),
             'failed', coalesce(s.failed, 0), 'pending', coalesce(s.pending, 0),
             'completionRate', case when coalesce(s.total, 0) = 0 then 0
                                    else round(100.0 * s.completed / s.total, 1) end,
             'totalChips', coalesce(s.chips, 0)))
      from (values ('red'), ('blue')) t(team)
      left join (select b.team_color, count(*) as total,
                        count(*) filter (where b.status = 'completed') as completed,
                        count(*) filter (where b.status = 'failed') as failed,
                        count(*) filter (where b.status = 'pending') as pending,
                        sum(b.chips) as chips
                   from private.workout_day_board(target) b group by b.team_color) s on s.team_color = t.team);
end
$$;
grant execute on function private.workout_team_stats(date) to authenticated, service_role;

create or replace function public.workout_team_stats(target date) returns jsonb
language sql stable set search_path = '' as $$ select private.workout_team_stats(target) $$;
comment on function public.workout_team_stats(date) is
  'Per team on a date: totalMembers, completed, failed (window over, no check-in), pending, completionRate (percent), totalChips.';
grant execute on function workout_team_stats(date) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Writing a check-in
-- ---------------------------------------------------------------------------------------------

create function private.record_workout_checkin(
  checkin_user uuid,
  activity_type text,
  photo_url text,
  photo_object text,
  photo_taken_local timestamp,
  photo_offset_minutes integer,
  photo_lat numeric,
  photo_lng numeric,
  given_lat numeric,
  given_lng numeric,
  at timestamptz default now(),
  auto_status text default null,
  photo_received_at timestamptz default null,
  photo_dhashes bigint[] default null,
  photo_too_plain boolean default false
) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  w public.workout_windows;
  loc public.workout_locations;
  c public.workout_chains;
  latest public.workout_checkins;
  d date;
  starts timestamptz;
  taken timestamptz;
  received timestamptz := coalesce(photo_received_at, at);
  continued boolean;
  early boolean;
  streak integer;
  chips integer;
  reason text;
  distance double precision;
  rules jsonb := private.workout_photo_rules();
  grace interval := make_interval(mins => (private.workout_photo_rules() ->> 'graceMinutes')::integer);
  row public.workout_checkins;
  notified boolean := false;
  band_lock bigint;
begin
  -- One check-in of a user at a time: the rules below read the user's latest check-in.
  perform pg_advisory_xact_lock(hashtextextended('workout_checkin:' || checkin_user::text, 0));
  select * into w from public.workout_windows where user_id = checkin_user;
  if not found then
    raise exception 'set up a workout window before checking in' using errcode = '22023';
  end if;
  if activity_type is null or btrim(activity_type) = '' or char_length(activity_type) > 50 then
    raise exception 'activityType: must be 1 to 50 characters' using errcode = '22023';
  end if;
  d := private.workout_checkin_date(w, at);

  -- A time-zone change applies from the next local day: a later date than the latest check-in,
  -- once that check-in's day is over in the zone it was counted in.
  select * into latest from public.workout_checkins k where k.user_id = checkin_user order by k.date desc limit 1;
  if found then
    if latest.date = d then
      raise exception 'already checked in for %', d using errcode = '23505', hint = 'already_checked_in';
    elsif latest.date > d then
      raise exception 'already checked in for % (% in %): a time-zone change applies to check-ins from the next local day',
        latest.date, d, w.timezone using errcode = '23505', hint = 'already_checked_in';
    elsif at < (latest.date + 1)::timestamp at time zone latest.timezone then
      raise exception 'already checked in for % in %, whose day lasts until % UTC: a time-zone change applies to check-ins from the next local day',
        latest.date, latest.timezone, to_char(((latest.date + 1)::timestamp at time zone latest.timezone) at time zone 'UTC', 'YYYY-MM-DD HH24:MI')
        using errcode = '23505', hint = 'already_checked_in';
    end if;
  end if;

  select * into loc from public.workout_locations where user_id = checkin_user;
  starts := private.workout_window_start(d, w.window_start_time, w.timezone);
  select * into c from public.workout_chains where user_id = checkin_user and date = d;

  -- Rule 3: +1 when the before user checked in earlier that day (chain continued).
  continued := c.before_user_id is not null and exists (
    select 1 from public.workout_checkins k
     where k.user_id = c.before_user_id and k.date = d and k.status <> 'rejected' and k.created_at < at);
  -- Rule 4: +0.5 in the first 30 minutes of the window; +2 from the seventh consecutive day.
  early := at >= starts and at < starts + interval '30 minutes';
  select coalesce(max(k.streak_days), 0) + 1 into streak
    from public.workout_checkins k
   where k.user_id = checkin_user and k.date = d - 1 and k.status <> 'rejected';
  chips := floor(1 + case when continued then 1 else 0 end + case when early then 0.5 else 0 end
                   + case when streak >= 7 then 2 else 0 end);

  -- Rule 6, and EXIF as a claim: the capture time (with its offset, else in the window's zone)
  -- inside the window with grace; the server's receipt inside it too; the capture no later
  -- than the receipt and not long before it; the photo near the user's location; its picture
  -- new (and not too plain to tell). Else it waits for review with the first reason.
  taken := case when photo_taken_local is null then null
                when photo_offset_minutes is not null
                  then (photo_taken_local - make_interval(mins => photo_offset_minutes)) at time zone 'UTC'
                else photo_taken_local at time zone w.timezone end;
  distance := private.haversine_km(coalesce(photo_lat, given_lat), coalesce(photo_lng, given_lng),
                                   coalesce(loc.latitude, case when photo_lat is not null then given_lat end),
                                   coalesce(loc.longitude, case when photo_lat is not null then given_lng end));
  reason := case
    when taken is null then 'no capture time (EXIF) in the photo'
    when taken < starts - grace or taken > starts + interval '2 hours' + grace then
      format('photo taken at %s, outside the window (%s to %s UTC, %s min grace)',
             to_char(taken at time zone 'UTC', 'YYYY-MM-DD HH24:MI'), to_char(starts at time zone 'UTC', 'HH24:MI'),
             to_char((starts + interval '2 hours') at time zone 'UTC', 'HH24:MI'), rules ->> 'graceMinutes')
    when received < starts - grace or received > starts + interval '2 hours' + grace then
      format('photo uploaded at %s, outside the window (%s to %s UTC, %s min grace)',
             to_char(received at time zone 'UTC', 'YYYY-MM-DD HH24:MI'), to_char(starts at time zone 'UTC', 'HH24:MI'),
             to_char((starts + interval '2 hours') at time zone 'UTC', 'HH24:MI'), rules ->> 'graceMinutes')
    when taken > received + make_interval(mins => (rules ->> 'clockSkewMinutes')::integer) then
      format('capture time %s UTC is after it was uploaded (%s UTC)',
             to_char(taken at time zone 'UTC', 'HH24:MI'), to_char(received at time zone 'UTC', 'HH24:MI'))
    when taken < received - make_interval(mins => (rules ->> 'maxPhotoAgeMinutes')::integer) then
      format('photo taken %s min before it was uploaded (at most %s)',
             floor(extract(epoch from received - taken) / 60), rules ->> 'maxPhotoAgeMinutes')
    when distance > (rules ->> 'maxDistanceKm')::numeric then
      format('photo taken %s km from your location', round(distance::numeric))
  end;
  if reason is null and cardinality(photo_dhashes) > 0 then
    -- Check-ins with the same picture at once take turns (so the second sees the first): one
    -- lock per band value (pictures within 3 bits share a band), taken in a fixed order.
    for band_lock in
      select distinct hashtextextended('workout_picture:' || b || ':' || ((h >> (16 * b)) & 65535), 0) as k
        from unnest(photo_dhashes) h cross join generate_series(0, 3) b order by k
    loop
      perform pg_advisory_xact_lock(band_lock);
    end loop;
    if exists (select 1 from unnest(photo_dhashes) h where private.workout_picture_used(h)) then
      reason := 'the same picture (or a copy of it) was already used for a check-in';
    end if;
  elsif reason is null and photo_too_plain then
    reason := 'the photo is almost one colour, too plain to tell it from others';
  end if;

  begin
    insert into public.workout_checkins as k (user_id, chain_id, date, activity_type, photo_url, photo_object,
      photo_timestamp, location_lat, location_lng, status, review_reason, chain_continued, streak_days,
      battle_chips_earned, created_at, timezone)
    values (checkin_user, c.id, d, btrim(activity_type), photo_url, photo_object, coalesce(taken, at),
      coalesce(photo_lat, given_lat), coalesce(photo_lng, given_lng),
      coalesce(auto_status, case when reason is null then 'verified' else 'pending' end),
      case when auto_status is null then reason end, continued, streak, chips, at, w.timezone)
    returning k.* into row;
  exception when unique_violation then
    raise exception 'already checked in for %', d using errcode = '23505', hint = 'already_checked_in';
  end;

  if c.after_user_id is not null then
    perform private.notify(c.after_user_id, 'workout.baton_pass', jsonb_build_object(
      'date', d, 'fromUserId', checkin_user, 'checkinId', row.id));
    notified := true;
  end if;
  return jsonb_build_object('checkin', private.workout_checkin_json(row, true), 'battleChipsEarned', chips,
    'chainStatus', case when continued then 'continued' else 'broken' end, 'nextUserNotified', notified);
end
$$;
comment on function private.record_workout_checkin(uuid, text, text, text, timestamp, integer, numeric, numeric, numeric, numeric, timestamptz, text, timestamptz, bigint[], boolean) is
  'Writes one check-in with its chips and validation and tells the after user; not granted to clients.';

-- The caller's check-in for the current window date, with a photo the api stored for them (used
-- once).
create function private.workout_checkin(activity_type text, photo_object text, latitude numeric, longitude numeric)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  photo private.workout_photos;
  result jsonb;
begin
  if me is null then
    raise exception 'sign in to check in' using errcode = '42501';
  end if;
  select * into photo from private.workout_photos p where p.object_name = $2 for update;
  if not found or photo.user_id <> me
     or not exists (select 1 from storage.objects o where o.bucket_id = 'workout-checkins' and o.name = photo.object_name) then
    raise exception 'photo: not a check-in photo the api stored for you (send it to POST /api/workout-window/checkin)'
      using errcode = '22023';
  end if;
  if photo.checkin_id is not null then
    raise exception 'photo: already used for a check-in' using errcode = 'PT409';
  end if;
  result := private.record_workout_checkin(me, $1, photo.photo_url, photo.object_name, photo.taken_local,
    photo.offset_minutes, photo.latitude, photo.longitude, $3, $4, now(), null, photo.received_at,
    array_remove(array[photo.dhash, photo.dhash_as_sent], null), photo.dhash is null);
  update private.workout_photos p set checkin_id = (result -> 'checkin' ->> 'id')::uuid where p.object_name = photo.object_name;
  return result;
end
$$;
grant execute on function private.workout_checkin(text,text,numeric,numeric) to authenticated;

create function public.workout_checkin(activity_type text, photo_object text, latitude numeric default null, longitude numeric default null)
returns jsonb
language sql
set search_path = ''
as $$ select private.workout_checkin(activity_type, photo_object, latitude, longitude) $$;
comment on function public.workout_checkin(text, text, numeric, numeric) is
  'The caller''s check-in for the current window date, with a photo POST /api/workout-window/checkin stored and read '
  'for them (once); latitude and longitude are the optional position of the SPEC''s form.';
grant execute on function workout_checkin(text,text,numeric,numeric) to authenticated, service_role;

-- The caller's check-in on a date and the day's status.
create or replace function private.my_workout_checkin(target date)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  k public.workout_checkins;
begin
  if me is null then
    raise exception 'sign in' using errcode = '42501';
  end if;
  select * into k from public.workout_checkins where user_id = me and date = target;
  return jsonb_build_object('checkin', case when found then private.workout_checkin_json(k) end,
                            'status', private.workout_day_status(me, target));
end
$$;
grant execute on function private.my_workout_checkin(date) to authenticated;

create or replace function public.my_workout_checkin(target date) returns jsonb
language sql stable set search_path = '' as $$ select private.my_workout_checkin(target) $$;
comment on function public.my_workout_checkin(date) is
  'The caller''s check-in on a date and the day status: pending, completed, failed or not_started.';
grant execute on function my_workout_checkin(date) to authenticated, service_role;

-- A date's check-ins, newest first: a location and review reason only on the caller's own
-- check-in (on all of them for super admins).
create or replace function private.workout_day_checkins(target date, page_size integer default 100, before_created_at timestamptz default null)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  trusted boolean := private.is_trusted_caller();
begin
  if me is null then
    raise exception 'sign in' using errcode = '42501';
  end if;
  return jsonb_build_object(
    'checkins', (select coalesce(jsonb_agg(private.workout_checkin_json(k, k.user_id = me or trusted)
                                             || jsonb_build_object('user', private.workout_user_card(k.user_id))
                                           order by k.created_at desc, k.id desc), '[]'::jsonb)
                   from (select * from public.workout_checkins k
                          where k.date = target and (before_created_at is null or k.created_at < before_created_at)
                          order by k.created_at desc, k.id desc
                          limit least(greatest(page_size, 1), 200)) k),
    'stats', (select jsonb_build_object('total', count(*),
                                        'completed', count(*) filter (where b.status = 'completed'),
                                        'failed', count(*) filter (where b.status = 'failed'))
                from private.workout_day_board(target) b));
end
$$;
grant execute on function private.workout_day_checkins(date,integer,timestamp with time zone) to authenticated;

create or replace function public.workout_day_checkins(target date, page_size integer default 100, before_created_at timestamptz default null)
returns jsonb
language sql stable set search_path = '' as $$ select private.workout_day_checkins(target, page_size, before_created_at) $$;
comment on function public.workout_day_checkins(date, integer, timestamptz) is
  'A page of the date''s check-ins, newest first, and {total, completed, failed} over the date''s participants.';
grant execute on function workout_day_checkins(date,integer,timestamp with time zone) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Time zones: repairing rows written before the rule (a migration ran it)
-- ---------------------------------------------------------------------------------------------

-- Repairs rows whose zone is no IANA name (none expected; a migration runs it): a window
-- falls back to UTC (its times stay; its owner sees the zone and can set theirs), a location
-- forgets its zone, and a check-in counted in such a zone goes back to review (its date may
-- have been moved) and keeps UTC as its zone. Returns how many rows of each it changed.
create or replace function private.repair_workout_time_zones() returns jsonb
language plpgsql
set search_path = ''
as $$
declare
  windows integer;
  locations integer;
  checkins integer;
begin
  update public.workout_windows w set timezone = coalesce(private.canonical_timezone(w.timezone), 'UTC')
   where w.timezone is distinct from private.canonical_timezone(w.timezone);
  get diagnostics windows = row_count;
  update public.workout_locations l set timezone = private.canonical_timezone(l.timezone)
   where l.timezone is distinct from private.canonical_timezone(l.timezone);
  get diagnostics locations = row_count;
  update public.workout_checkins k
     set review_reason = case when z.name is null and k.status = 'verified'
                              then format('counted in %s, which is not a time zone: its date may be wrong', k.timezone)
                              else k.review_reason end,
         status = case when z.name is null and k.status = 'verified' then 'pending' else k.status end,
         timezone = coalesce(z.name, 'UTC')
    from public.workout_checkins o cross join lateral (select private.canonical_timezone(o.timezone) as name) z
   where o.id = k.id and k.timezone is distinct from z.name;
  get diagnostics checkins = row_count;
  if windows + locations + checkins > 0 then
    raise log 'repair_workout_time_zones: % windows, % locations, % check-ins', windows, locations, checkins;
  end if;
  return jsonb_build_object('windows', windows, 'locations', locations, 'checkins', checkins);
end
$$;
comment on function private.repair_workout_time_zones() is
  'Puts rows whose time zone is no IANA name right: windows to UTC, locations without a zone, check-ins back to review.';

-- ---------------------------------------------------------------------------------------------
-- Live check-ins: who checked in today, for their chain neighbours and squad (Realtime)
-- ---------------------------------------------------------------------------------------------

-- workout_checkins is its owner's (photo, location, review reason): Realtime sends every column
-- of a row to whoever may select it, so the table others watch is this narrow copy, one row per
-- check-in, written by a trigger (every path: the api, the RPC, synthetic users). It says who
-- checked in, when, on which date and in which squad; no photo, no location, no review. The
-- neighbours of the checker's chain that date and its squad mates may select it (their own
-- chain row for that date says so); clients watch INSERTs (docs/workout.md). Kept three days
-- (the five-minute job prunes older dates).
create table public.workout_checkin_events (
  checkin_id uuid primary key references public.workout_checkins (id) on delete cascade,
  user_id uuid not null references public.profiles (id) on delete cascade,
  date date not null,
  squad_id uuid,
  activity_type text not null,
  created_at timestamptz not null default now()
);
alter table public.workout_checkin_events enable row level security;
comment on table public.workout_checkin_events is
  'A check-in as the checker''s chain neighbours and squad mates may see it live (Realtime): who, when, date, squad, activity; no photo, location or review. Written by trigger, pruned after 3 days.';
comment on column public.workout_checkin_events.squad_id is
  'The checker''s squad that date when they checked in (no foreign key: squads go with a deleted member).';
revoke all on public.workout_checkin_events from anon, authenticated, service_role;
grant select on public.workout_checkin_events to authenticated, service_role;

create index workout_checkin_events_by_user on public.workout_checkin_events (user_id);
create index workout_checkin_events_by_date on public.workout_checkin_events (date);

alter publication supabase_realtime add table public.workout_checkin_events;

-- The viewer's own chain row for the event's date (unique per user and date) decides: the
-- checker is one of its neighbours, or in its squad.
create policy "workout_checkin_events: checker, neighbours, squad, admins read"
  on public.workout_checkin_events for select to authenticated
  using (
    user_id = (select auth.uid())
    or exists (select 1 from public.workout_chains c
                where c.user_id = (select auth.uid()) and c.date = workout_checkin_events.date
                  and (workout_checkin_events.user_id = c.before_user_id
                       or workout_checkin_events.user_id = c.after_user_id
                       or c.squad_id = workout_checkin_events.squad_id))
    or (select private.is_super_admin()));

create or replace function private.publish_workout_checkin() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  insert into public.workout_checkin_events (checkin_id, user_id, date, squad_id, activity_type, created_at)
  select new.id, new.user_id, new.date,
         (select c.squad_id from public.workout_chains c where c.user_id = new.user_id and c.date = new.date),
         new.activity_type, new.created_at;
  return null;
end
$$;
comment on function private.publish_workout_checkin() is
  'After a check-in: its live event for the checker''s chain neighbours and squad mates (public.workout_checkin_events).';

create trigger workout_checkins_publish after insert on public.workout_checkins
  for each row execute function private.publish_workout_checkin();

-- The five-minute job's pruning: events of dates more than three days back, a bounded chunk.
create or replace function private.prune_workout_checkin_events(at timestamptz default now(), max_rows integer default 5000)
returns integer
language sql security definer
set search_path = ''
as $$
  with gone as (
    delete from public.workout_checkin_events e
     where e.checkin_id = any (array(select x.checkin_id from public.workout_checkin_events x
                                      where x.date < (at at time zone 'UTC')::date - 3 limit max_rows))
    returning 1)
  select count(*)::integer from gone
$$;
comment on function private.prune_workout_checkin_events(timestamptz, integer) is
  'Deletes up to max_rows live check-in events of dates more than 3 days before at (UTC).';
