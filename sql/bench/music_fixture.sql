-- Listening-history bench fixture: 1,000 users, 5,000 tracks and 1,000,000 plays (1,000 per
-- user, one every 3 minutes, the newest an hour ago), so linking an entry probes a big table.
-- BENCH_SCALE=k (the setting bench.scale): k x 1,000 users, so k x 1,000,000 plays.
-- Ids: users b12a0000-0000-4000-8000-<n as 12 hex digits>, tracks bt<n>.
insert into auth.users (id, email)
select ('b12a0000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'bench-music-' || i || '@example.test'
  from generate_series(1, 1000 * coalesce(nullif(current_setting('bench.scale', true), '')::integer, 1)) i
on conflict do nothing;

insert into public.music_tracks (id, name, artists, album, album_image_url, external_url, duration_ms, raw)
select 'bt' || i, 'Bench song ' || i, array['Bench artist ' || (i % 300)], 'Bench album ' || (i % 500),
       'https://i.example/' || i || '.jpg', 'https://open.example/track/bt' || i, 200000, jsonb_build_object('id', 'bt' || i)
  from generate_series(1, 5000) i
on conflict do nothing;

insert into public.music_plays (user_id, played_at, track_id)
select ('b12a0000-0000-4000-8000-' || lpad(to_hex(u), 12, '0'))::uuid,
       now() - interval '1 hour' - make_interval(mins => 3 * g),
       'bt' || (1 + ((u * 7919 + g * 104729) % 5000))
  from generate_series(1, 1000 * coalesce(nullif(current_setting('bench.scale', true), '')::integer, 1)) u, generate_series(0, 999) g
on conflict do nothing;

analyze public.music_plays;
analyze public.music_tracks;
