-- =============================================================================================
-- Workout windows
-- =============================================================================================
-- A 2-hour daily window per user, a private location, daily chains (before/after neighbours),
-- squads and red/blue teams, photo check-ins that earn battle chips, weekly battles, a daily
-- mosaic and synthetic (AI) users.
--
-- Who sees what: a user reads and writes their own window and location (super admins read
-- all). Locations never leave the database except to their owner: matching uses them inside
-- security definer SQL only. Chains, squads and check-ins are written only by the functions
-- below; their readers get other users' id, name, avatar and window, never a location.
-- Battles and mosaics are readable by every signed-in user.
--
-- Time: a window's start on a date is `(date + window_start_time) at time zone timezone`, an
-- instant; its end is two hours later (so a window may cross midnight). A check-in belongs to
-- the date whose window it is nearest to in the user's own timezone (see
-- private.workout_checkin_date). Zones are IANA names only, on every write path.
--
-- The area is split as its routes are (functions/api/routes/workout/), loaded in this order
-- (supabase/config.toml, schema_paths): shared, windows, chains, checkins, review, battles,
-- mosaic, ai_users, jobs. This file: time zones and the small helpers every other one uses.

-- ---------------------------------------------------------------------------------------------
-- Time zones: IANA names only, on every write path
-- ---------------------------------------------------------------------------------------------

-- The names a window or location may use: IANA zones (Europe/Paris, America/New_York, UTC,
-- Etc/GMT-14), whose offsets stay within -12 and +14 hours. Postgres also accepts POSIX
-- strings ("ABC-167": 167 hours ahead) wherever a zone is expected, and pg_timezone_names
-- reads every zone file (about 30 ms), so the names are kept here, filled once. Left out:
-- the posix/ and right/ copies, posixrules, localtime and Factory (no one's zone).
create table private.time_zone_names (name text primary key check (char_length(name) <= 50));
alter table private.time_zone_names enable row level security;
comment on table private.time_zone_names is
  'IANA time zone names Postgres knows (from pg_timezone_names when the migration ran): the zones a workout window '
  'or location may use. After a tzdata upgrade that adds zones, insert the new names.';

-- Postgres reads zone names case-insensitively; the name is stored as IANA spells it.
create unique index time_zone_names_by_lower_name on private.time_zone_names (lower(name));

-- The IANA spelling of a zone name, or null when it is none (a POSIX string, an offset, a typo).
create or replace function private.canonical_timezone(tz text) returns text
language sql stable security definer
set search_path = ''
as $$ select n.name from private.time_zone_names n where lower(n.name) = lower(tz) $$;
comment on function private.canonical_timezone(text) is
  'The IANA spelling of a time zone name, or null when it is not one (POSIX strings and offsets are not).';
grant execute on function private.canonical_timezone(text) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Small helpers
-- ---------------------------------------------------------------------------------------------

-- Whether a name is an IANA time zone name (POSIX strings and offsets are not).
create or replace function private.is_valid_timezone(name text) returns boolean
language sql stable
set search_path = ''
as $$ select private.canonical_timezone(name) is not null $$;
comment on function private.is_valid_timezone(text) is 'True for an IANA time zone name (no POSIX strings, no offsets).';
grant execute on function private.is_valid_timezone(text) to authenticated, service_role;

create or replace function private.haversine_km(lat1 numeric, lng1 numeric, lat2 numeric, lng2 numeric)
returns double precision
language sql immutable parallel safe
set search_path = ''
as $$
  select 2 * 6371.0088 * asin(sqrt(
      power(sin(radians((lat2 - lat1)::double precision) / 2), 2)
    + cos(radians(lat1::double precision)) * cos(radians(lat2::double precision))
      * power(sin(radians((lng2 - lng1)::double precision) / 2), 2)))
$$;
comment on function private.haversine_km(numeric, numeric, numeric, numeric) is
  'Great-circle distance in km (Haversine, mean Earth radius); null when a coordinate is null.';

-- The instant a window starts on a local date.
create or replace function private.workout_window_start(local_date date, start_time time, tz text)
returns timestamptz
language sql stable parallel safe
set search_path = ''
as $$ select (local_date + start_time) at time zone tz $$;

-- A deterministic number in [0, 1) from a text seed (jobs that must repeat exactly).
create or replace function private.seeded_fraction(seed text) returns double precision
language sql immutable parallel safe
set search_path = ''
as $$ select ('x' || substr(md5(seed), 1, 8))::bit(32)::bigint / 4294967296.0 $$;
