-- Workout check-ins and chains, security round two (issue 20, findings 1, 3 and 9).
--
-- 1. Check-in locations and review reasons are private: every function that shows a check-in
--    to someone other than its owner (day lists, chains, squads) leaves locationLat,
--    locationLng and reviewReason null, unless the reader is a super admin (or a trusted
--    caller: the service role, pg_cron). The table itself was already readable only by its
--    owner and super admins. The photo stays visible: it is the check-in's social proof, and
--    the api now stores it without metadata (functions/_shared/workout_photo.ts).
-- 3. The check-in RPC trusts no client fact. The api reads the photo (capture time, GPS),
--    strips and stores it with the service role, and records what it read in
--    private.workout_photos, a table no client role can read or write, keyed by the storage
--    object. public.workout_checkin takes only that object (and the optional position the
--    SPEC's form carries): the object must be one the api registered for the caller, still in
--    the bucket, and not used by another check-in; the URL and the photo facts come from the
--    registration. EXIF stays a claim the client controls, so a check-in verifies
--    automatically only when, besides the capture time in the window (± 30 min) and the
--    position within 50 km, the server received the photo inside the window (± 30 min), the
--    capture time is no later than the receipt (5 min of clock skew) and at most 120 minutes
--    before it, and its picture is new: its 64-bit difference hash (dHash, computed by the api
--    from the decoded, upright picture, so neither edited EXIF nor re-encoding makes a picture
--    new) is more than 7 bits from that of every photo that served a check-in before, anyone's
--    (two people may photograph the same gym, so a match waits for review, never refused); a
--    picture too plain to hash (almost one colour) waits for review too. Otherwise it waits
--    for review with the first reason that failed.
--    A time-zone change applies to check-ins from the next local day: a check-in needs a
--    later date than the user's latest check-in, and comes after that check-in's day has
--    ended in the zone it was counted in (stored on the check-in). Check-ins of one user run
--    one at a time (an advisory lock), so the rule holds under concurrency, whatever changed
--    the zone (setup, a PostgREST update, deleting and recreating the window).
-- 9. Chain generation: a user may generate only today and tomorrow in their window's time zone
--    (from the date their check-in would count for, which is yesterday while a window that
--    crossed midnight still runs); other dates are for super admins, the service role and
--    pg_cron; a date more than a year (366 days) from today (UTC) is 400 for everyone.
-- Time zones (review of the above): a window's or location's zone must be an IANA name
--    Postgres knows (private.time_zone_names, filled from pg_timezone_names), on every write
--    path; a POSIX string such as "ABC-167" (offsets up to ±167 hours) let a user move their
--    local date a week and check in for past dates or generate chains for later ones.

-- =======================================================================================
-- The zone a check-in's date was counted in
-- =======================================================================================

alter table public.workout_checkins
  add column timezone text not null default 'UTC' check (char_length(timezone) <= 50);
update public.workout_checkins k set timezone = w.timezone
  from public.workout_windows w
 where w.user_id = k.user_id and k.timezone is distinct from w.timezone;
comment on column public.workout_checkins.timezone is
  'The time zone the check-in''s date was counted in (the window''s then): the day lasts until the next midnight there.';

-- =======================================================================================
-- Photos the api read and stored
-- =======================================================================================

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
alter table private.workout_photos enable row level security;
revoke all on private.workout_photos from public, anon, authenticated, service_role;

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
revoke execute on function private.register_workout_photo(text, uuid, text, bigint, bigint, timestamp, integer, numeric, numeric)
  from public, anon, authenticated;
grant execute on function private.register_workout_photo(text, uuid, text, bigint, bigint, timestamp, integer, numeric, numeric) to service_role;

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
revoke execute on function public.register_workout_photo(text, uuid, text, bigint, bigint, timestamp, integer, numeric, numeric)
  from public, anon, authenticated;
grant execute on function public.register_workout_photo(text, uuid, text, bigint, bigint, timestamp, integer, numeric, numeric) to service_role;

-- =======================================================================================
-- Writing a check-in
-- =======================================================================================

-- Supersedes 20261122050000_workout.sql: adds the receipt and clock rules (see the top).
create or replace function private.workout_photo_rules() returns jsonb
language sql immutable
set search_path = ''
as $$ select '{"graceMinutes": 30, "maxDistanceKm": 50, "maxPhotoAgeMinutes": 120, "clockSkewMinutes": 5, "samePictureBits": 7}'::jsonb $$;
comment on function private.workout_photo_rules() is
  'Photo validation: grace around the window (capture and receipt), distance from the user''s location, how long '
  'before its receipt a photo may be taken, how far a camera clock may run ahead, and within how many bits of 64 '
  'two pictures'' difference hashes count as the same picture.';

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
revoke execute on function private.workout_picture_used(bigint) from public, anon, authenticated;

-- Supersedes 20261122050000_workout.sql's record_workout_checkin (three more arguments: when
-- the server received the photo, its picture's dHash and whether it was too plain to hash; the
-- time-zone rule; the check-in's zone).
drop function private.record_workout_checkin(uuid, text, text, text, timestamp, integer, numeric, numeric, numeric, numeric, timestamptz, text);
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
      raise exception 'already checked in for %', d using errcode = '23505';
    elsif latest.date > d then
      raise exception 'already checked in for % (% in %): a time-zone change applies to check-ins from the next local day',
        latest.date, d, w.timezone using errcode = '23505';
    elsif at < (latest.date + 1)::timestamp at time zone latest.timezone then
      raise exception 'already checked in for % in %, whose day lasts until % UTC: a time-zone change applies to check-ins from the next local day',
        latest.date, latest.timezone, to_char(((latest.date + 1)::timestamp at time zone latest.timezone) at time zone 'UTC', 'YYYY-MM-DD HH24:MI')
        using errcode = '23505';
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
    raise exception 'already checked in for %', d using errcode = '23505';
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
revoke execute on function private.record_workout_checkin(uuid, text, text, text, timestamp, integer, numeric, numeric, numeric, numeric, timestamptz, text, timestamptz, bigint[], boolean)
  from public, anon, authenticated;

-- Supersedes 20261122050000_workout.sql's workout_checkin, which took the photo's URL and facts
-- from the client.
drop function public.workout_checkin(text, text, text, timestamp, integer, numeric, numeric, numeric, numeric);
drop function private.workout_checkin(text, text, text, timestamp, integer, numeric, numeric, numeric, numeric);

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
revoke execute on function private.workout_checkin(text, text, numeric, numeric) from public, anon;
grant execute on function private.workout_checkin(text, text, numeric, numeric) to authenticated;

create function public.workout_checkin(activity_type text, photo_object text, latitude numeric default null, longitude numeric default null)
returns jsonb
language sql
set search_path = ''
as $$ select private.workout_checkin(activity_type, photo_object, latitude, longitude) $$;
comment on function public.workout_checkin(text, text, numeric, numeric) is
  'The caller''s check-in for the current window date, with a photo POST /api/workout-window/checkin stored and read '
  'for them (once); latitude and longitude are the optional position of the SPEC''s form.';
revoke execute on function public.workout_checkin(text, text, numeric, numeric) from public, anon;
grant execute on function public.workout_checkin(text, text, numeric, numeric) to authenticated;

-- =======================================================================================
-- Reading check-ins: locations and review reasons for their owner and super admins only
-- =======================================================================================

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
comment on function private.workout_checkin_json(public.workout_checkins, boolean) is
  'A check-in as the api shows it; without full_view (another user) its location and review reason are null.';

-- Supersedes 20261122050000_workout.sql: the one-argument form now shows what the caller may see.
create or replace function private.workout_checkin_json(k public.workout_checkins)
returns jsonb
language sql stable
set search_path = ''
as $$ select private.workout_checkin_json(k, k.user_id = (select auth.uid()) or private.is_trusted_caller()) $$;
comment on function private.workout_checkin_json(public.workout_checkins) is
  'A check-in as the caller may see it: its location and review reason for its owner and trusted callers only.';

-- Supersedes 20261122050000_workout.sql (chains and squads): others' check-ins without location
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

-- Supersedes 20261122050000_workout.sql: the day's list shows a location and review reason
-- only on the caller's own check-in (all of them to super admins).
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

-- Supersedes 20261122050000_workout.sql: trusted callers only, so everything, computed once.
create or replace function private.workout_review_queue(review_status text, page_size integer, before_created_at timestamptz)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins only' using errcode = '42501';
  end if;
  if review_status not in ('pending', 'verified', 'rejected') then
    raise exception 'status: must be one of pending, verified, rejected' using errcode = '22023';
  end if;
  return (select coalesce(jsonb_agg(private.workout_checkin_json(k, true)
                                      || jsonb_build_object('user', private.workout_user_card(k.user_id))
                                    order by k.created_at desc, k.id desc), '[]'::jsonb)
            from (select * from public.workout_checkins k
                   where k.status = review_status and (before_created_at is null or k.created_at < before_created_at)
                   order by k.created_at desc, k.id desc limit least(greatest(page_size, 1), 200)) k);
end
$$;

-- =======================================================================================
-- Chain generation: which dates a caller may generate
-- =======================================================================================

-- The date a caller asked for (or today in their window's zone, UTC without a window), checked:
-- within a year of today (UTC) for everyone; for users who are not trusted, only today or
-- tomorrow in their window's zone. Then the generator (20261124010000) runs.
create or replace function private.checked_workout_chains(target date)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  trusted boolean := private.is_trusted_caller();
  w public.workout_windows;
  today_utc date := (now() at time zone 'UTC')::date;
  first_day date;
  last_day date;
begin
  if me is null and not trusted then
    raise exception 'sign in to generate chains' using errcode = '42501';
  end if;
  if target < today_utc - 366 or target > today_utc + 366 then
    raise exception 'date: must be within a year of today (% to %)', today_utc - 366, today_utc + 366 using errcode = '22023';
  end if;
  if me is not null then
    select * into w from public.workout_windows where user_id = me;
  end if;
  target := coalesce(target, (now() at time zone coalesce(w.timezone, 'UTC'))::date);
  if not trusted then
    first_day := case when w.user_id is null then today_utc else private.workout_checkin_date(w, now()) end;
    last_day := (now() at time zone coalesce(w.timezone, 'UTC'))::date + 1;
    if target < first_day or target > last_day then
      raise exception 'date: you may generate chains for today and tomorrow only (% to %, %); other dates are for super admins',
        first_day, last_day, coalesce(w.timezone, 'UTC') using errcode = '42501';
    end if;
  end if;
  return private.generate_workout_chains(target);
end
$$;
comment on function private.checked_workout_chains(date) is
  'Chain generation with its date rules: users today and tomorrow (their window''s zone), trusted callers any date within a year.';
revoke execute on function private.checked_workout_chains(date) from public, anon;
grant execute on function private.checked_workout_chains(date) to authenticated, service_role;

-- The generator itself is no longer callable by API roles: only through the checks above (or
-- by the database owner: pg_cron, the SQL dashboard, tests).
revoke execute on function private.generate_workout_chains(date) from public, anon, authenticated, service_role;

-- Supersedes 20261122050000_workout.sql: the date rules above, and today in the caller's zone by default.
create or replace function public.generate_workout_chains(target date default null)
returns jsonb
language sql
set search_path = ''
as $$ select private.checked_workout_chains(target) $$;
comment on function public.generate_workout_chains(date) is
  'Generates (or completes) the chains of a date, by default today in the caller''s window''s zone (UTC without one). '
  'Users: today and tomorrow only; super admins, the service role and pg_cron: any date within a year of today.';

-- =======================================================================================
-- Time zones: IANA names only, on every write path
-- =======================================================================================

-- The names a window or location may use: IANA zones (Europe/Paris, America/New_York, UTC,
-- Etc/GMT-14), whose offsets stay within -12 and +14 hours. Postgres also accepts POSIX
-- strings ("ABC-167": 167 hours ahead) wherever a zone is expected, and pg_timezone_names
-- reads every zone file (about 30 ms), so the names are kept here, filled once. Left out:
-- the posix/ and right/ copies, posixrules, localtime and Factory (no one's zone).
create table private.time_zone_names (name text primary key check (char_length(name) <= 50));
comment on table private.time_zone_names is
  'IANA time zone names Postgres knows (from pg_timezone_names when the migration ran): the zones a workout window '
  'or location may use. After a tzdata upgrade that adds zones, insert the new names.';
insert into private.time_zone_names (name)
select name from pg_catalog.pg_timezone_names
 where name !~ '^(posix|right)/' and name not in ('posixrules', 'localtime', 'Factory') and char_length(name) <= 50
on conflict do nothing;
-- Postgres reads zone names case-insensitively; the name is stored as IANA spells it.
create unique index time_zone_names_by_lower_name on private.time_zone_names (lower(name));
alter table private.time_zone_names enable row level security;
revoke all on private.time_zone_names from public, anon, authenticated, service_role;

-- The IANA spelling of a zone name, or null when it is none (a POSIX string, an offset, a typo).
create or replace function private.canonical_timezone(tz text) returns text
language sql stable security definer
set search_path = ''
as $$ select n.name from private.time_zone_names n where lower(n.name) = lower(tz) $$;
comment on function private.canonical_timezone(text) is
  'The IANA spelling of a time zone name, or null when it is not one (POSIX strings and offsets are not).';
revoke execute on function private.canonical_timezone(text) from public, anon;
grant execute on function private.canonical_timezone(text) to authenticated, service_role;

-- Supersedes 20261122050000_workout.sql: IANA names only (that one let POSIX strings through).
create or replace function private.is_valid_timezone(name text) returns boolean
language sql stable
set search_path = ''
as $$ select private.canonical_timezone(name) is not null $$;
comment on function private.is_valid_timezone(text) is 'True for an IANA time zone name (no POSIX strings, no offsets).';

-- Supersedes 20261122050000_workout.sql: the same check, IANA names only.
create or replace function private.check_workout_timezone(tz text) returns void
language plpgsql stable
set search_path = ''
as $$
begin
  if tz is not null and not private.is_valid_timezone(tz) then
    raise exception 'timezone: % is not an IANA time zone name such as Europe/Paris', tz using errcode = '22023';
  end if;
end
$$;

-- Supersedes 20261122050000_workout.sql's triggers: the zone is checked (IANA names only) and
-- stored as IANA spells it, on insert and whenever it changes, whoever writes (PostgREST, the
-- RPCs, the api, synthetic user generation).
create or replace function private.prepare_workout_window() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' or new.timezone is distinct from old.timezone then
    perform private.check_workout_timezone(new.timezone);
    new.timezone := private.canonical_timezone(new.timezone);
  end if;
  new.updated_at := now();
  return new;
end
$$;

create or replace function private.prepare_workout_location() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' or new.timezone is distinct from old.timezone then
    perform private.check_workout_timezone(new.timezone);
    new.timezone := private.canonical_timezone(new.timezone);
  end if;
  new.last_updated := now();
  return new;
end
$$;

-- Rows written before this rule with a zone that is no IANA name (none expected): a window
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
revoke execute on function private.repair_workout_time_zones() from public, anon, authenticated, service_role;
select private.repair_workout_time_zones();

notify pgrst, 'reload schema';
