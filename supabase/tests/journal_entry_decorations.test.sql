-- Entry decorations: background_url, tone_icon_url and track travel with
-- every entry read (view and feed alike); only the owner records a background, and only the
-- address of an object stored for that entry.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

select plan(14);

select tests.create_user(to_jsonb(u)) from (values 
  ('d5000000-0000-4000-8000-000000000001', 'pgtap-deco-owner@example.test'),
  ('d5000000-0000-4000-8000-000000000002', 'pgtap-deco-other@example.test')) u (id, email);
insert into public.journal_entries (id, user_id, title, metadata_visibility, content_visibility)
values ('d50000e0-0000-4000-8000-000000000001', 'd5000000-0000-4000-8000-000000000001', 'Sunrise', 'public', 'public');
insert into public.journal_entry_contents (entry_id, content) values ('d50000e0-0000-4000-8000-000000000001', 'text');

select is(
  (select array_agg(attname::text order by attnum) from pg_attribute
    where attrelid = 'public.journal_entry_details'::regclass and attnum between 16 and 18),
  array['background_url', 'tone_icon_url', 'track'],
  'the view carries the three decorations after the stored columns');

insert into storage.buckets (id, name, public) values ('entry-backgrounds', 'entry-backgrounds', true) on conflict do nothing;
insert into storage.objects (bucket_id, name) values
  ('entry-backgrounds', 'd5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-1.png'), ('entry-backgrounds', 'd5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-2.png');

set local role authenticated;
select tests.authenticate_as('d5000000-0000-4000-8000-000000000001');
select throws_ok(
  $$select public.set_entry_background('d5000000-0000-4000-8000-000000000001', 'd50000e0-0000-4000-8000-000000000001', 'd5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-1.png', 'https://evil.example/d5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-1.png')$$,
  '42501', null, 'no client records a background, not even the owner (the api does, as service role)');
select throws_ok($$update public.journal_entries set background_url = 'http://evil/x.png'$$, '42501', null,
  'no client writes background_url directly');

reset role;
set local role service_role;
select throws_ok(
  $$select public.set_entry_background('d5000000-0000-4000-8000-000000000002', 'd50000e0-0000-4000-8000-000000000001',
      'd5000000-0000-4000-8000-000000000002/d50000e0-0000-4000-8000-000000000001-1.png', 'http://x/d5000000-0000-4000-8000-000000000002/d50000e0-0000-4000-8000-000000000001-1.png')$$,
  'PT404', null, 'someone else''s entry: not found');
select throws_ok(
  $$select public.set_entry_background('d5000000-0000-4000-8000-000000000001', 'd50000e0-0000-4000-8000-000000000001', 'd5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-9.png', 'http://x/d5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-9.png')$$,
  '22023', 'object_name: must name a stored object in the owner''s folder for this entry',
  'the object must exist in the bucket');
select throws_ok(
  $$select public.set_entry_background('d5000000-0000-4000-8000-000000000001', 'd50000e0-0000-4000-8000-000000000001', 'd5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-1.png', 'http://evil.example/other.png')$$,
  '22023', 'url: must be the public address of object_name', 'the URL must point at the object');
select is(
  public.set_entry_background('d5000000-0000-4000-8000-000000000001', 'd50000e0-0000-4000-8000-000000000001', 'd5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-1.png',
    'http://x/storage/v1/object/public/entry-backgrounds/d5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-1.png') ->> 'previous_object',
  null, 'the first background replaces nothing');
select is(
  public.set_entry_background('d5000000-0000-4000-8000-000000000001', 'd50000e0-0000-4000-8000-000000000001', 'd5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-2.png',
    'http://x/storage/v1/object/public/entry-backgrounds/d5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-2.png') ->> 'previous_object',
  'd5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-1.png', 'a new background returns the object it replaced');

reset role;
set local role authenticated;
select tests.authenticate_as('d5000000-0000-4000-8000-000000000001');
select is((select background_url from public.journal_entry_details where id = 'd50000e0-0000-4000-8000-000000000001'),
  'http://x/storage/v1/object/public/entry-backgrounds/d5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-2.png',
  'the view carries the newest background');
select is((select background_url from public.journal_feed('own') limit 1),
  'http://x/storage/v1/object/public/entry-backgrounds/d5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-2.png',
  'the own feed carries it');
select tests.authenticate_as('d5000000-0000-4000-8000-000000000002');
select is((select background_url from public.journal_feed('visible') where id = 'd50000e0-0000-4000-8000-000000000001'),
  'http://x/storage/v1/object/public/entry-backgrounds/d5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-2.png',
  'the visible feed carries it for another reader');
select ok((select tone_icon_url is null and track is null from public.journal_feed('visible') where id = 'd50000e0-0000-4000-8000-000000000001'),
  'no pack, no track: both null');

reset role;
set local role anon;
select is((select background_url from public.journal_entry_details where id = 'd50000e0-0000-4000-8000-000000000001'),
  'http://x/storage/v1/object/public/entry-backgrounds/d5000000-0000-4000-8000-000000000001/d50000e0-0000-4000-8000-000000000001-2.png',
  'anonymous readers see a public entry''s background');
select throws_ok($$select public.set_entry_background(null, null, null, null)$$, '42501', null, 'anonymous callers cannot set one');

select * from finish();
rollback;
