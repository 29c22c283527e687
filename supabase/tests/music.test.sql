-- Listening history: who may read links, plays, tracks and tokens
-- (a matrix as data), tokens encrypted at rest, single-use PKCE states, entries linked at
-- creation by one index probe, late plays relinking, and the claim of due links.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(35);

select tests.create_user(to_jsonb(u)) from (values 
  ('e1200000-0000-4000-8000-000000000001', 'pgtap-music-owner@example.test'),
  ('e1200000-0000-4000-8000-000000000002', 'pgtap-music-other@example.test')) u (id, email);

-- ---------------------------------------------------------------------------------------
-- Privileges: no client role reaches tokens, states or the job's functions.

select is(tests.client_table_privileges(array['private.music_tokens', 'private.music_oauth_states']),
  null, 'no client role has any privilege on tokens or pending logins');
select is(
  tests.client_function_grants(array[
    'public.music_take_state(text)', 'public.music_save_link(uuid,text,text,text,text,timestamptz)',
    'public.music_claim_links(integer,integer,integer)', 'public.music_claim_user(uuid,integer,integer)',
    'public.music_save_tokens(uuid,text,text,timestamptz)', 'public.music_sync_failed(uuid,text,boolean)',
    'public.music_store_sync(uuid,jsonb,jsonb)', 'private.music_decrypt(bytea)', 'private.music_token_key()',
    'private.music_sync_work(public.music_connections)']),
  null, 'the job''s functions (and decryption) are the service role''s only');
select ok(has_function_privilege('service_role', 'public.music_claim_links(integer,integer,integer)', 'EXECUTE')
      and has_function_privilege('service_role', 'public.music_store_sync(uuid,jsonb,jsonb)', 'EXECUTE'),
  'the service role runs the sync');
select is(
  (select array_agg(column_name::text order by column_name) from information_schema.columns
    where table_schema = 'public' and table_name = 'music_connections' and column_name like '%token%'),
  array['token_expires_at'], 'the exposed link has no token column');

-- ---------------------------------------------------------------------------------------
-- Link, tokens encrypted

select lives_ok($$select public.music_save_link('e1200000-0000-4000-8000-000000000001', 'listener-pgtap',
  'user-read-recently-played', 'access-secret-value', 'refresh-secret-value', now() + interval '1 hour')$$,
  'a link is stored');
select ok((select position('secret-value' in encode(access_token, 'escape')) = 0
              and position('secret-value' in encode(refresh_token, 'escape')) = 0
             from private.music_tokens where user_id = 'e1200000-0000-4000-8000-000000000001'),
  'tokens are ciphertext at rest');
select is((select private.music_decrypt(refresh_token) from private.music_tokens where user_id = 'e1200000-0000-4000-8000-000000000001'),
  'refresh-secret-value', 'and decrypt with the Vault key');
select public.music_save_tokens('e1200000-0000-4000-8000-000000000001', 'access-2', null, now() + interval '1 hour');
select is((select array[private.music_decrypt(access_token), private.music_decrypt(refresh_token)] from private.music_tokens
            where user_id = 'e1200000-0000-4000-8000-000000000001'),
  array['access-2', 'refresh-secret-value'], 'a refresh without rotation keeps the stored refresh token');

-- ---------------------------------------------------------------------------------------
-- PKCE states

set local role authenticated;
select tests.authenticate_as('e1200000-0000-4000-8000-000000000001');
select throws_ok($$select public.music_begin_connect('not-hex', repeat('v', 43))$$, '22023', null, 'state_hash must be a sha256');
select throws_ok($$select public.music_begin_connect(repeat('a', 64), 'short')$$, '22023', null, 'a verifier of 43 to 128 characters');
select ok((select e between now() + interval '9 minutes' and now() + interval '10 minutes'
             from (select public.music_begin_connect(repeat('a', 64), repeat('v', 43)) as e) x),
  'a login lives 10 minutes');
reset role;
select is((select array[outcome, user_id::text, code_verifier] from public.music_take_state(repeat('a', 64))),
  array['ok', 'e1200000-0000-4000-8000-000000000001', repeat('v', 43)], 'the first callback takes it');
select is((select outcome from public.music_take_state(repeat('a', 64))), 'used', 'a second one does not');
select is((select outcome from public.music_take_state(repeat('b', 64))), 'unknown', 'an unknown state');
insert into private.music_oauth_states (state_hash, user_id, code_verifier, expires_at)
values (repeat('c', 64), 'e1200000-0000-4000-8000-000000000001', repeat('v', 43), now() - interval '1 second');
select is((select outcome from public.music_take_state(repeat('c', 64))), 'expired', 'an expired state');

-- ---------------------------------------------------------------------------------------
-- Plays, tracks, entry linking

select is(
  (select array[plays_added, plays_skipped, entries_linked] from public.music_store_sync('e1200000-0000-4000-8000-000000000001',
    '[{"track_id": "t-old", "played_at": "2026-01-01T10:00:00Z"}, {"track_id": "t-new", "played_at": "2026-01-01T11:00:00Z"},
      {"track_id": "t-unknown", "played_at": "2026-01-01T11:30:00Z"}]',
    '[{"id": "t-old", "name": "Old", "artists": ["A"], "album": "X", "album_image_url": "https://img/old", "external_url": "https://open/old", "raw": {"id": "t-old"}},
      {"id": "t-new", "name": "New", "artists": ["B", "C"], "album": "Y", "album_image_url": "https://img/new", "external_url": "https://open/new", "raw": {"id": "t-new"}}]')),
  array[2, 1, 0], 'plays of known tracks are stored; a play whose track is neither given nor cached is skipped');

insert into public.journal_entries (id, user_id, title, created_at) values
  ('e12000e0-0000-4000-8000-000000000001', 'e1200000-0000-4000-8000-000000000001', 'between', '2026-01-01T10:30:00Z'),
  ('e12000e0-0000-4000-8000-000000000002', 'e1200000-0000-4000-8000-000000000001', 'exactly at', '2026-01-01T11:00:00Z'),
  ('e12000e0-0000-4000-8000-000000000003', 'e1200000-0000-4000-8000-000000000001', 'before any', '2026-01-01T09:00:00Z'),
  ('e12000e0-0000-4000-8000-000000000004', 'e1200000-0000-4000-8000-000000000002', 'other user', '2026-01-01T12:00:00Z'),
  ('e12000e0-0000-4000-8000-000000000005', 'e1200000-0000-4000-8000-000000000001', 'later', '2026-01-01T11:50:00Z');
select is(
  (select array_agg(coalesce(music_track_id, '-') order by id) from public.journal_entries where id::text like 'e12000e0%'),
  array['t-old', 't-new', '-', '-', 't-new'],
  'each new entry gets the latest play at or before created_at (equal counts), of its own author only');

select is(
  (select private.entry_track(music_track_id) from public.journal_entries where id = 'e12000e0-0000-4000-8000-000000000002'),
  '{"id": "t-new", "name": "New", "artists": ["B", "C"], "album": "Y", "album_image_url": "https://img/new",
    "image_url": "https://img/new", "external_url": "https://open/new"}'::jsonb,
  'the entry view''s track: title, artists, album art, link');

-- A late play (11:40) arrives: only the entry written after it changes.
select is(
  (select array[plays_added, entries_linked] from public.music_store_sync('e1200000-0000-4000-8000-000000000001',
    '[{"track_id": "t-old", "played_at": "2026-01-01T11:40:00Z"}, {"track_id": "t-new", "played_at": "2026-01-01T11:00:00Z"}]', '[]')),
  array[1, 1], 'a late play is stored once and relinks the entry it precedes');
select is(
  (select array_agg(coalesce(music_track_id, '-') order by id) from public.journal_entries where id::text like 'e12000e0%'),
  array['t-old', 't-new', '-', '-', 't-old'], 'earlier entries keep their track');
select is(
  (select array[plays_added, entries_linked] from public.music_store_sync('e1200000-0000-4000-8000-000000000001',
    '[{"track_id": "t-old", "played_at": "2026-01-01T11:40:00Z"}]', '[]')),
  array[0, 0], 'the same sync again changes nothing');
select ok((select last_synced_at is not null and sync_claimed_until is null from public.music_connections
            where user_id = 'e1200000-0000-4000-8000-000000000001'), 'a stored sync marks the link synced and releases it');

-- The lookup is one probe of the plays' primary key.
create temporary table plan_lines (line text);
do $$
declare l text;
begin
  for l in execute $q$explain (costs off) select p.track_id from public.music_plays p
    where p.user_id = 'e1200000-0000-4000-8000-000000000001' and p.played_at <= '2026-01-01T11:45:00Z'
    order by p.played_at desc limit 1$q$ loop
    insert into plan_lines values (l);
  end loop;
end
$$;
select ok((select bool_or(line ~ 'Index (Only )?Scan Backward using music_plays_(\w+_)?pkey') from plan_lines),
  'linking an entry reads the newest play through the primary key (a partition''s)');

-- ---------------------------------------------------------------------------------------
-- Who reads what (owner, other user, anon)

create temporary table music_visibility (who text, relation text, rows_seen integer);
grant insert, select on music_visibility to anon, authenticated;
set local role authenticated;
select tests.authenticate_as('e1200000-0000-4000-8000-000000000001');
insert into music_visibility select 'owner', 'music_connections', count(*) from public.music_connections where user_id = 'e1200000-0000-4000-8000-000000000001';
insert into music_visibility select 'owner', 'music_plays', count(*) from public.music_plays where user_id = 'e1200000-0000-4000-8000-000000000001';
insert into music_visibility select 'owner', 'music_tracks', count(*) from public.music_tracks where id in ('t-old', 't-new');
select tests.authenticate_as('e1200000-0000-4000-8000-000000000002');
insert into music_visibility select 'other', 'music_connections', count(*) from public.music_connections where user_id = 'e1200000-0000-4000-8000-000000000001';
insert into music_visibility select 'other', 'music_plays', count(*) from public.music_plays where user_id = 'e1200000-0000-4000-8000-000000000001';
insert into music_visibility select 'other', 'music_tracks', count(*) from public.music_tracks where id in ('t-old', 't-new');
select throws_ok($$insert into public.music_plays (user_id, played_at, track_id) values ('e1200000-0000-4000-8000-000000000002', now(), 't-old')$$,
  '42501', null, 'clients cannot write plays');
select throws_ok($$update public.music_connections set needs_reconnect = false$$, '42501', null, 'clients cannot write links');
reset role;
set local role anon;
select throws_ok($$select count(*) from public.music_connections$$, '42501', null, 'anon reads no links at all');
select throws_ok($$select count(*) from public.music_plays$$, '42501', null, 'anon reads no plays at all');
insert into music_visibility select 'anon', 'music_tracks', count(*) from public.music_tracks where id in ('t-old', 't-new');
reset role;
select results_eq(
  $$select who, relation, rows_seen from music_visibility order by who, relation$$,
  $$values ('anon', 'music_tracks', 2),
           ('other', 'music_connections', 0), ('other', 'music_plays', 0), ('other', 'music_tracks', 2),
           ('owner', 'music_connections', 1), ('owner', 'music_plays', 3), ('owner', 'music_tracks', 2)$$,
  'links and plays: owner only; the track cache: everyone');

-- ---------------------------------------------------------------------------------------
-- Claims

update public.music_connections set last_synced_at = null where user_id = 'e1200000-0000-4000-8000-000000000001';
update public.music_connections set last_synced_at = now() where user_id <> 'e1200000-0000-4000-8000-000000000001';
insert into private.music_oauth_states (state_hash, user_id, code_verifier, expires_at, created_at)
values (repeat('d', 64), 'e1200000-0000-4000-8000-000000000002', repeat('v', 43), now() - interval '2 days', now() - interval '2 days');
select is((select array[user_id::text, access_token, refresh_token] from public.music_claim_links(10, 300, 600)),
  array['e1200000-0000-4000-8000-000000000001', 'access-2', 'refresh-secret-value'], 'a due link is claimed with its tokens');
select is((select count(*)::int from public.music_claim_links(10, 300, 600)), 0, 'a claimed link is not claimed twice');
select ok(not exists (select 1 from private.music_oauth_states where state_hash = repeat('d', 64)),
  'a sync-all run forgets logins expired more than a day ago');
select is((select outcome from public.music_claim_user('e1200000-0000-4000-8000-000000000001', 60, 300)), 'busy',
  'nor by a user''s own sync while a run holds it');
select public.music_sync_failed('e1200000-0000-4000-8000-000000000001', 'invalid_grant', true);
select ok((select needs_reconnect from public.music_connections where user_id = 'e1200000-0000-4000-8000-000000000001')
      and not exists (select 1 from private.music_tokens where user_id = 'e1200000-0000-4000-8000-000000000001'),
  'invalid_grant: needs reconnection, tokens dropped');

-- Connecting again: the same account resumes after the newest play; another one starts afresh.
update public.music_connections set last_synced_at = now() where user_id = 'e1200000-0000-4000-8000-000000000001';
select public.music_save_link('e1200000-0000-4000-8000-000000000001', 'listener-pgtap', '', 'a3', 'r3', now() + interval '1 hour');
select is((select array[needs_reconnect::text, (w.after_ms = extract(epoch from timestamptz '2026-01-01T11:40:00Z') * 1000)::text]
             from public.music_connections c cross join lateral private.music_sync_work(c) w
            where c.user_id = 'e1200000-0000-4000-8000-000000000001'),
  array['false', 'true'], 'reconnecting the same account clears needs_reconnect and resumes after the newest play');
select public.music_save_link('e1200000-0000-4000-8000-000000000001', 'another-listener', '', 'a4', 'r4', now() + interval '1 hour');
select is((select w.after_ms from public.music_connections c cross join lateral private.music_sync_work(c) w
            where c.user_id = 'e1200000-0000-4000-8000-000000000001'),
  null, 'another account''s first sync reads the provider''s newest plays');

select * from finish();
rollback;
