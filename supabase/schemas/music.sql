-- =============================================================================================
-- Music: listening history
-- =============================================================================================
-- Listening history: a music account linked with OAuth PKCE, its tokens encrypted at rest where
-- no client role can read them, plays and a track cache filled by the sync job, and journal
-- entries linked to the track playing when they were written.
--
-- Who calls what:
--   authenticated (the caller's token):
--     public.music_begin_connect(state_hash, code_verifier)  a pending PKCE login (10 minutes, single use)
--     public.music_disconnect(purge)                          removes link and tokens (and plays when purge)
--     select on public.music_connections / music_plays (own rows), music_tracks (everyone)
--   service_role only (the api function's jobs; tokens are decrypted only in these):
--     public.music_take_state(state_hash)          consumes a pending login
--     public.music_save_link(...)                  stores a new link with its tokens
--     public.music_claim_links(max_links, ...)     a chunk of due links for sync-all (skip locked)
--     public.music_claim_user(user_id, cooldown)   one user's link for POST /api/music/sync
--     public.music_save_tokens(...)                a refreshed (and maybe rotated) token pair
--     public.music_sync_failed(...)                releases a claim, records the failure
--     public.music_store_sync(user_id, plays, tracks)  plays, tracks and entry relinking, one transaction
--
-- The key that encrypts tokens is the Vault secret music_token_key (created by a migration).

-- Tokens are encrypted at rest with pgcrypto (pgp_sym_encrypt), its key in Vault.
create extension if not exists pgcrypto with schema extensions;

-- ---------------------------------------------------------------------------------------------
-- Tables
-- ---------------------------------------------------------------------------------------------

create table public.music_connections (
  user_id uuid primary key references public.profiles (id) on delete cascade,
  music_user_id text not null check (char_length(music_user_id) between 1 and 200),
  scope text not null default '' check (char_length(scope) <= 1000),
  token_expires_at timestamptz not null,
  connected_at timestamptz not null default now(),
  last_synced_at timestamptz,
  needs_reconnect boolean not null default false,
  last_error text check (char_length(last_error) <= 1000),
  manual_sync_at timestamptz,
  sync_claimed_until timestamptz
);
alter table public.music_connections enable row level security;
comment on table public.music_connections is
  'One linked music account per user (SPEC Listening history). Tokens are in private.music_tokens, never here.';
comment on column public.music_connections.needs_reconnect is
  'The provider refused the refresh token (invalid_grant): syncing stops until the user connects again.';
comment on column public.music_connections.sync_claimed_until is
  'A sync run''s claim on this link (claimed with for update skip locked); runs side by side skip it until then.';
comment on column public.music_connections.manual_sync_at is 'Last POST /api/music/sync, for its per-user cooldown.';
revoke all on public.music_connections from anon, authenticated;
grant select on public.music_connections to authenticated;

-- sync-all's order: never synced first, then the oldest.
create index music_connections_due on public.music_connections (last_synced_at asc nulls first)
  where not needs_reconnect;

create table private.music_tokens (
  user_id uuid primary key references public.music_connections (user_id) on delete cascade,
  access_token bytea not null,
  refresh_token bytea not null,
  updated_at timestamptz not null default now()
);
comment on table private.music_tokens is
  'Provider tokens, pgp_sym_encrypt''ed with the Vault secret music_token_key; read only inside the sync functions.';

create table private.music_oauth_states (
  state_hash text primary key,
  user_id uuid not null references public.profiles (id) on delete cascade,
  code_verifier text not null check (char_length(code_verifier) between 43 and 128),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  used_at timestamptz
);
comment on table private.music_oauth_states is
  'Pending PKCE logins: sha256 of the state (the callback''s credential), the caller, the verifier; single use.';

create index music_oauth_states_user on private.music_oauth_states (user_id);

create table public.music_tracks (
  id text primary key check (char_length(id) between 1 and 100),
  name text not null,
  artists text[] not null default '{}',
  album text,
  album_image_url text,
  external_url text,
  duration_ms integer,
  explicit boolean not null default false,
  raw jsonb not null,
  updated_at timestamptz not null default now()
);
alter table public.music_tracks enable row level security;
comment on table public.music_tracks is
  'Track cache (SPEC Listening history): the provider''s catalog data, filled by the sync; readable by everyone (no user data).';
revoke all on public.music_tracks from anon, authenticated;
grant select on public.music_tracks to anon, authenticated;

create table public.music_plays (
  user_id uuid not null references public.profiles (id) on delete cascade,
  played_at timestamptz not null,
  track_id text not null references public.music_tracks (id),
  source text not null default 'recently_played' check (char_length(source) <= 50),
  primary key (user_id, played_at)
) partition by range (played_at);
alter table public.music_plays enable row level security;
comment on table public.music_plays is
  'A user''s plays, one per played_at; the primary key is also the entry-linking lookup (one index probe). '
  'Partitioned by month of played_at (private.music_plays_yYYYYmMM, made ahead by the retention job; older rows in '
  'private.music_plays_default), so retention drops a whole month at once (retention.sql).';

-- Plays no monthly partition holds (those from before partitioning, or far in the past).
create table private.music_plays_default partition of public.music_plays default;
-- Partitions do not inherit RLS: on for each (the monthly ones by ensure_music_play_partitions).
alter table private.music_plays_default enable row level security;
revoke all on public.music_plays from anon, authenticated;
grant select on public.music_plays to authenticated;

create index music_plays_track on public.music_plays (track_id);

create policy "music_connections: owner reads" on public.music_connections
  for select to authenticated using (user_id = (select auth.uid()));

create policy "music_plays: owner reads" on public.music_plays
  for select to authenticated using (user_id = (select auth.uid()));

create policy "music_tracks: catalog data, readable by all" on public.music_tracks
  for select to anon, authenticated using (true);

-- ---------------------------------------------------------------------------------------------
-- Encryption
-- ---------------------------------------------------------------------------------------------

create or replace function private.music_token_key() returns text
language plpgsql stable security definer
set search_path = ''
as $$
declare
  k text;
begin
  select decrypted_secret into k from vault.decrypted_secrets where name = 'music_token_key';
  if k is null then
    raise exception 'Vault secret music_token_key is missing' using errcode = '55000';
  end if;
  return k;
end
$$;
comment on function private.music_token_key() is 'The key music tokens are encrypted with (Vault).';

-- Encrypts a provider token with the Vault key (pgp_sym_encrypt).
create or replace function private.music_encrypt(token text) returns bytea
language sql stable
set search_path = ''
as $$ select extensions.pgp_sym_encrypt(token, private.music_token_key(), 'cipher-algo=aes256') $$;

-- Decrypts a stored provider token with the Vault key.
create or replace function private.music_decrypt(secret bytea) returns text
language sql stable
set search_path = ''
as $$ select extensions.pgp_sym_decrypt(secret, private.music_token_key()) $$;

-- A pending PKCE login for the caller (10 minutes, single use); refused while impersonating.
create or replace function private.music_begin_connect(state_hash text, code_verifier text) returns timestamptz
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  expires timestamptz := now() + interval '10 minutes';
begin
  if me is null then
    raise exception 'sign in first' using errcode = '42501';
  end if;
  if state_hash is null or state_hash !~ '^[0-9a-f]{64}$' then
    raise exception 'state_hash: must be a hex sha256' using errcode = '22023';
  end if;
  if code_verifier is null or code_verifier !~ '^[A-Za-z0-9._~-]{43,128}$' then
    raise exception 'code_verifier: 43 to 128 unreserved characters' using errcode = '22023';
  end if;
  perform private.refuse_while_impersonating('connecting a music account');
  -- Serialize a user's logins so the cap holds under concurrent calls.
  perform pg_advisory_xact_lock(hashtextextended('music_begin_connect:' || me::text, 0));
  delete from private.music_oauth_states s
   where s.user_id = me and (s.used_at is not null or s.expires_at <= now());
  if (select count(*) from private.music_oauth_states s where s.user_id = me) >= 5 then
    delete from private.music_oauth_states s
     where s.state_hash = (select s2.state_hash from private.music_oauth_states s2
                            where s2.user_id = me order by s2.created_at limit 1);
  end if;
  insert into private.music_oauth_states (state_hash, user_id, code_verifier, expires_at)
  values (music_begin_connect.state_hash, me, music_begin_connect.code_verifier, expires);
  return expires;
end
$$;
grant execute on function private.music_begin_connect(text,text) to authenticated;

create or replace function public.music_begin_connect(state_hash text, code_verifier text) returns timestamptz
language sql
set search_path = ''
as $$ select private.music_begin_connect($1, $2) $$;
comment on function public.music_begin_connect(text, text) is
  'Starts a PKCE login for the caller (the api''s POST /api/music/connect); returns its expiry.';
grant execute on function music_begin_connect(text,text) to authenticated, service_role;

/*
 * Consumes a pending login: exactly one caller gets outcome 'ok' with the user and verifier;
 * otherwise 'unknown', 'used' or 'expired'.
 */
create or replace function private.music_take_state(state_hash text)
returns table (outcome text, user_id uuid, code_verifier text)
language plpgsql security definer
set search_path = ''
as $$
declare
  s private.music_oauth_states;
begin
  update private.music_oauth_states o set used_at = now()
   where o.state_hash = music_take_state.state_hash and o.used_at is null and o.expires_at > now()
  returning o.* into s;
  if found then
    return query select 'ok'::text, s.user_id, s.code_verifier;
    return;
  end if;
  select o.* into s from private.music_oauth_states o where o.state_hash = music_take_state.state_hash;
  return query select case when not found then 'unknown' when s.used_at is not null then 'used' else 'expired' end,
                      null::uuid, null::text;
end
$$;
grant execute on function private.music_take_state(text) to service_role;

create or replace function public.music_take_state(state_hash text)
returns table (outcome text, user_id uuid, code_verifier text)
language sql
set search_path = ''
as $$ select * from private.music_take_state($1) $$;
comment on function public.music_take_state(text) is 'Service role: consumes a pending music login (callback).';
grant execute on function music_take_state(text) to service_role;

/* Stores a new (or renewed) link and its tokens, encrypted, in one statement pair. */
create or replace function private.music_save_link(
  user_id uuid, music_user_id text, scope text, access_token text, refresh_token text, expires_at timestamptz
) returns public.music_connections
language plpgsql security definer
set search_path = ''
as $$
declare
  link public.music_connections;
begin
  if access_token is null or refresh_token is null or music_user_id is null or expires_at is null then
    raise exception 'a link needs a music user id, both tokens and an expiry' using errcode = '22023';
  end if;
  insert into public.music_connections as c (user_id, music_user_id, scope, token_expires_at, connected_at)
  values (music_save_link.user_id, music_save_link.music_user_id, coalesce(music_save_link.scope, ''),
          music_save_link.expires_at, now())
  on conflict on constraint music_connections_pkey do update
     set music_user_id = excluded.music_user_id, scope = excluded.scope, token_expires_at = excluded.token_expires_at,
         connected_at = excluded.connected_at, needs_reconnect = false, last_error = null, sync_claimed_until = null,
         -- Another account: its first sync reads the provider's newest plays, not after ours.
         last_synced_at = case when c.music_user_id = excluded.music_user_id then c.last_synced_at end
  returning c.* into link;
  insert into private.music_tokens as t (user_id, access_token, refresh_token)
  values (music_save_link.user_id, private.music_encrypt(music_save_link.access_token),
          private.music_encrypt(music_save_link.refresh_token))
  on conflict on constraint music_tokens_pkey do update
     set access_token = excluded.access_token, refresh_token = excluded.refresh_token, updated_at = now();
  return link;
end
$$;
grant execute on function private.music_save_link(uuid,text,text,text,text,timestamp with time zone) to service_role;

create or replace function public.music_save_link(
  user_id uuid, music_user_id text, scope text, access_token text, refresh_token text, expires_at timestamptz
) returns public.music_connections
language sql
set search_path = ''
as $$ select private.music_save_link($1, $2, $3, $4, $5, $6) $$;
comment on function public.music_save_link(uuid, text, text, text, text, timestamptz) is
  'Service role: stores a user''s music link with its tokens (encrypted).';
grant execute on function music_save_link(uuid,text,text,text,text,timestamp with time zone) to service_role;

/* The caller removes their link and tokens; their plays too when purge. */
create or replace function private.music_disconnect(purge boolean) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  removed integer;
  plays integer := 0;
begin
  if me is null then
    raise exception 'sign in first' using errcode = '42501';
  end if;
  delete from public.music_connections c where c.user_id = me; -- tokens go with it (cascade)
  get diagnostics removed = row_count;
  delete from private.music_oauth_states s where s.user_id = me;
  if coalesce(purge, false) then
    delete from public.music_plays p where p.user_id = me;
    get diagnostics plays = row_count;
  end if;
  return jsonb_build_object('disconnected', removed > 0, 'plays_removed', plays);
end
$$;
grant execute on function private.music_disconnect(boolean) to authenticated;

create or replace function public.music_disconnect(purge boolean default false) returns jsonb
language sql
set search_path = ''
as $$ select private.music_disconnect($1) $$;
comment on function public.music_disconnect(boolean) is
  'The caller''s music link and tokens removed (plays stay unless purge): {disconnected, plays_removed}.';
grant execute on function music_disconnect(boolean) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Syncing: claims, tokens, results
-- ---------------------------------------------------------------------------------------------

/*
 * What a sync of one link needs: decrypted tokens and where to resume (ms since epoch): after
 * the newest stored play, or nowhere (the provider's newest plays) before the link's first sync.
 */
create or replace function private.music_sync_work(link public.music_connections)
returns table (user_id uuid, music_user_id text, access_token text, refresh_token text,
               token_expires_at timestamptz, after_ms bigint)
language sql stable
set search_path = ''
as $$
  select link.user_id, link.music_user_id, private.music_decrypt(t.access_token), private.music_decrypt(t.refresh_token),
         link.token_expires_at,
         case when link.last_synced_at is not null then
           (select (extract(epoch from max(p.played_at)) * 1000)::bigint from public.music_plays p where p.user_id = link.user_id)
         end
    from private.music_tokens t
   where t.user_id = link.user_id
$$;

/*
 * Claims up to max_links due links (never synced first, then the oldest), skipping links
 * another run holds (row locks or an unexpired claim), so runs side by side share the work.
 * Each row also says how many due links remain unclaimed after this claim.
 */
create or replace function private.music_claim_links(max_links integer, lease_seconds integer, min_interval_seconds integer)
returns table (user_id uuid, music_user_id text, access_token text, refresh_token text,
               token_expires_at timestamptz, after_ms bigint, remaining bigint)
language plpgsql security definer
set search_path = ''
as $$
declare
  n integer := least(greatest(coalesce(max_links, 50), 1), 1000);
  claimed uuid[];
  left_over bigint;
begin
  with due as (
    select c.user_id from public.music_connections c
     where not c.needs_reconnect
       and (c.last_synced_at is null or c.last_synced_at <= now() - make_interval(secs => coalesce(min_interval_seconds, 0)))
       and (c.sync_claimed_until is null or c.sync_claimed_until < now())
     order by c.last_synced_at asc nulls first
     limit n
       for update of c skip locked
  ), claimed_rows as (
    update public.music_connections c
       set sync_claimed_until = now() + make_interval(secs => greatest(coalesce(lease_seconds, 300), 1))
      from due where c.user_id = due.user_id
    returning c.user_id
  )
  select coalesce(array_agg(r.user_id), '{}') into claimed from claimed_rows r;

  -- Logins never completed (users who did not come back) are forgotten a day after expiry.
  delete from private.music_oauth_states s where s.expires_at < now() - interval '1 day';

  select count(*) into left_over from public.music_connections c
   where not c.needs_reconnect
     and (c.last_synced_at is null or c.last_synced_at <= now() - make_interval(secs => coalesce(min_interval_seconds, 0)))
     and (c.sync_claimed_until is null or c.sync_claimed_until < now());

  return query
    select w.user_id, w.music_user_id, w.access_token, w.refresh_token, w.token_expires_at, w.after_ms, left_over
      from public.music_connections c
     cross join lateral private.music_sync_work(c) w
     where c.user_id = any (claimed);
  -- A claimed link without tokens (none should exist) cannot sync: release it for reconnection.
  update public.music_connections c set sync_claimed_until = null, needs_reconnect = true,
         last_error = 'tokens missing: connect again'
   where c.user_id = any (claimed) and not exists (select 1 from private.music_tokens t where t.user_id = c.user_id);
end
$$;
grant execute on function private.music_claim_links(integer,integer,integer) to service_role;

create or replace function public.music_claim_links(max_links integer default 50, lease_seconds integer default 300,
                                                    min_interval_seconds integer default 600)
returns table (user_id uuid, music_user_id text, access_token text, refresh_token text,
               token_expires_at timestamptz, after_ms bigint, remaining bigint)
language sql
set search_path = ''
as $$ select * from private.music_claim_links($1, $2, $3) $$;
comment on function public.music_claim_links(integer, integer, integer) is
  'Service role (sync-all): claims a chunk of due links with their decrypted tokens; remaining = due links left unclaimed.';
grant execute on function music_claim_links(integer,integer,integer) to service_role;

/*
 * Claims one user's link for a sync they asked for. outcome: 'ok' (with the work),
 * 'not_connected', 'needs_reconnect', 'busy' (another run holds it) or 'cooldown' (with
 * retry_after seconds).
 */
create or replace function private.music_claim_user(user_id uuid, cooldown_seconds integer, lease_seconds integer)
returns table (outcome text, retry_after integer, music_user_id text, access_token text, refresh_token text,
               token_expires_at timestamptz, after_ms bigint)
language plpgsql security definer
set search_path = ''
as $$
declare
  link public.music_connections;
  wait_s integer;
begin
  select c.* into link from public.music_connections c where c.user_id = music_claim_user.user_id for update skip locked;
  if not found then
    if exists (select 1 from public.music_connections c where c.user_id = music_claim_user.user_id) then
      return query select 'busy'::text, null::integer, null::text, null::text, null::text, null::timestamptz, null::bigint;
    else
      return query select 'not_connected'::text, null::integer, null::text, null::text, null::text, null::timestamptz, null::bigint;
    end if;
    return;
  end if;
  if link.needs_reconnect or not exists (select 1 from private.music_tokens t where t.user_id = link.user_id) then
    return query select 'needs_reconnect'::text, null::integer, null::text, null::text, null::text, null::timestamptz, null::bigint;
    return;
  end if;
  if link.sync_claimed_until > now() then
    return query select 'busy'::text, null::integer, null::text, null::text, null::text, null::timestamptz, null::bigint;
    return;
  end if;
  wait_s := ceil(extract(epoch from link.manual_sync_at + make_interval(secs => coalesce(cooldown_seconds, 0)) - now()));
  if wait_s > 0 then
    return query select 'cooldown'::text, wait_s, null::text, null::text, null::text, null::timestamptz, null::bigint;
    return;
  end if;
  update public.music_connections c
     set manual_sync_at = now(), sync_claimed_until = now() + make_interval(secs => greatest(coalesce(lease_seconds, 300), 1))
   where c.user_id = link.user_id
  returning c.* into link;
  return query select 'ok'::text, null::integer, w.music_user_id, w.access_token, w.refresh_token, w.token_expires_at, w.after_ms
                 from private.music_sync_work(link) w;
end
$$;
grant execute on function private.music_claim_user(uuid,integer,integer) to service_role;

create or replace function public.music_claim_user(user_id uuid, cooldown_seconds integer default 60, lease_seconds integer default 300)
returns table (outcome text, retry_after integer, music_user_id text, access_token text, refresh_token text,
               token_expires_at timestamptz, after_ms bigint)
language sql
set search_path = ''
as $$ select * from private.music_claim_user($1, $2, $3) $$;
comment on function public.music_claim_user(uuid, integer, integer) is
  'Service role (POST /api/music/sync): claims one user''s link, with its per-user cooldown.';
grant execute on function music_claim_user(uuid,integer,integer) to service_role;

/* A refreshed access token; the refresh token only when the provider rotated it. */
create or replace function private.music_save_tokens(user_id uuid, access_token text, refresh_token text, expires_at timestamptz)
returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  update private.music_tokens t
     set access_token = private.music_encrypt(music_save_tokens.access_token),
         refresh_token = coalesce(private.music_encrypt(music_save_tokens.refresh_token), t.refresh_token),
         updated_at = now()
   where t.user_id = music_save_tokens.user_id;
  if not found then
    raise exception 'no music link for this user' using errcode = 'PT404';
  end if;
  update public.music_connections c set token_expires_at = music_save_tokens.expires_at
   where c.user_id = music_save_tokens.user_id;
end
$$;
grant execute on function private.music_save_tokens(uuid,text,text,timestamp with time zone) to service_role;

create or replace function public.music_save_tokens(user_id uuid, access_token text, refresh_token text, expires_at timestamptz)
returns void
language sql
set search_path = ''
as $$ select private.music_save_tokens($1, $2, $3, $4) $$;
comment on function public.music_save_tokens(uuid, text, text, timestamptz) is
  'Service role: stores a refreshed token pair (refresh_token null keeps the stored one).';
grant execute on function music_save_tokens(uuid,text,text,timestamp with time zone) to service_role;

/*
 * A sync that failed (or was never started): releases the claim and records why. With
 * needs_reconnect the tokens are dropped (the provider refused them) and syncing stops.
 */
create or replace function private.music_sync_failed(user_id uuid, error text, needs_reconnect boolean)
returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  update public.music_connections c
     set sync_claimed_until = null,
         last_error = left(music_sync_failed.error, 1000),
         needs_reconnect = c.needs_reconnect or coalesce(music_sync_failed.needs_reconnect, false)
   where c.user_id = music_sync_failed.user_id;
  if coalesce(music_sync_failed.needs_reconnect, false) then
    delete from private.music_tokens t where t.user_id = music_sync_failed.user_id;
  end if;
end
$$;
grant execute on function private.music_sync_failed(uuid,text,boolean) to service_role;

create or replace function public.music_sync_failed(user_id uuid, error text default null, needs_reconnect boolean default false)
returns void
language sql
set search_path = ''
as $$ select private.music_sync_failed($1, $2, $3) $$;
comment on function public.music_sync_failed(uuid, text, boolean) is
  'Service role: releases a sync claim; error null releases it without a failure (a run out of time).';
grant execute on function music_sync_failed(uuid,text,boolean) to service_role;

-- ---------------------------------------------------------------------------------------------
-- Linking entries
-- ---------------------------------------------------------------------------------------------

-- Clients cannot write music_track_id (it is not in their column grants), so a value present
-- on insert was set by a trusted session and is kept.
create or replace function private.link_entry_track() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  if new.music_track_id is null then
    -- The author's most recent play at or before created_at: one backward probe of the
    -- plays' primary key (plpgsql keeps this plan for the session).
    select p.track_id into new.music_track_id
      from public.music_plays p
     where p.user_id = new.user_id and p.played_at <= new.created_at
     order by p.played_at desc
     limit 1;
  end if;
  return new;
end
$$;

create trigger journal_entries_track_link before insert on public.journal_entries
  for each row execute function private.link_entry_track();

/*
 * One sync's results in one transaction: tracks upserted (full objects), plays inserted
 * idempotently, the entries whose link the new plays change relinked, the link marked synced.
 * plays: [{track_id, played_at}]; tracks: [{id, name, artists, album, album_image_url,
 * external_url, duration_ms, explicit, raw}]. Plays of tracks neither given nor cached are
 * skipped (counted in plays_skipped).
 */
create or replace function private.music_store_sync(user_id uuid, plays jsonb, tracks jsonb)
returns table (plays_added integer, plays_skipped integer, entries_linked integer)
language plpgsql security definer
set search_path = ''
as $$
declare
  added integer := 0;
  skipped integer;
  linked integer := 0;
  earliest timestamptz;
begin
  if jsonb_typeof(coalesce(plays, '[]')) <> 'array' or jsonb_typeof(coalesce(tracks, '[]')) <> 'array' then
    raise exception 'plays and tracks must be arrays' using errcode = '22023';
  end if;
  if not exists (select 1 from public.music_connections c where c.user_id = music_store_sync.user_id) then
    raise exception 'no music link for this user' using errcode = 'PT404';
  end if;

  insert into public.music_tracks as m (id, name, artists, album, album_image_url, external_url, duration_ms, explicit, raw, updated_at)
  select distinct on (t.id) t.id, coalesce(t.name, ''), coalesce(t.artists, '{}'), t.album, t.album_image_url, t.external_url,
         t.duration_ms, coalesce(t.explicit, false), coalesce(t.raw, '{}'), now()
    from jsonb_to_recordset(coalesce(tracks, '[]')) as t(id text, name text, artists text[], album text, album_image_url text,
                                                         external_url text, duration_ms integer, explicit boolean, raw jsonb)
   where t.id is not null
  on conflict on constraint music_tracks_pkey do update
     set name = excluded.name, artists = excluded.artists, album = excluded.album, album_image_url = excluded.album_image_url,
         external_url = excluded.external_url, duration_ms = excluded.duration_ms, explicit = excluded.explicit,
         raw = excluded.raw, updated_at = excluded.updated_at
   where (m.name, m.artists, m.album, m.album_image_url, m.external_url, m.duration_ms, m.explicit, m.raw)
         is distinct from (excluded.name, excluded.artists, excluded.album, excluded.album_image_url, excluded.external_url,
                           excluded.duration_ms, excluded.explicit, excluded.raw);

  select count(*) into skipped from jsonb_to_recordset(coalesce(plays, '[]')) as x(track_id text, played_at timestamptz)
   where x.played_at is null or not exists (select 1 from public.music_tracks m where m.id = x.track_id);
  with fresh as (
    insert into public.music_plays as p (user_id, played_at, track_id)
    select music_store_sync.user_id, x.played_at, x.track_id
      from jsonb_to_recordset(coalesce(plays, '[]')) as x(track_id text, played_at timestamptz)
     where x.played_at is not null and exists (select 1 from public.music_tracks m where m.id = x.track_id)
    on conflict on constraint music_plays_pkey do nothing
    returning p.played_at
  )
  select count(*), min(f.played_at) into added, earliest from fresh f;

  -- Plays arrive late: an entry written at or after the earliest new play may now have a
  -- more recent track than the one it was linked to at creation.
  if earliest is not null then
    with relink as (
      select e.id, (select p.track_id from public.music_plays p
                     where p.user_id = e.user_id and p.played_at <= e.created_at
                     order by p.played_at desc limit 1) as track_id
        from public.journal_entries e
       where e.user_id = music_store_sync.user_id and e.created_at >= earliest
    )
    update public.journal_entries e set music_track_id = r.track_id
      from relink r
     where e.id = r.id and r.track_id is not null and e.music_track_id is distinct from r.track_id;
    get diagnostics linked = row_count;
  end if;

  update public.music_connections c
     set last_synced_at = now(), last_error = null, sync_claimed_until = null
   where c.user_id = music_store_sync.user_id;
  return query select added, skipped, linked;
end
$$;
grant execute on function private.music_store_sync(uuid,jsonb,jsonb) to service_role;

create or replace function public.music_store_sync(user_id uuid, plays jsonb, tracks jsonb)
returns table (plays_added integer, plays_skipped integer, entries_linked integer)
language sql
set search_path = ''
as $$ select * from private.music_store_sync($1, $2, $3) $$;
comment on function public.music_store_sync(uuid, jsonb, jsonb) is
  'Service role: one sync''s tracks and plays stored, late-linked entries relinked, the link marked synced; one transaction.';
grant execute on function music_store_sync(uuid,jsonb,jsonb) to service_role;

