-- Tone packs: every policy and function as owner, sharee, buyer, stranger, super
-- admin and anonymous, as a matrix of data (what, statement, expected per caller), each case
-- run as the caller's role and claims inside a savepoint that is rolled back; then the
-- purchase function under the ledger invariant, activation by any path, the entry icon seam.
begin;
create extension if not exists pgtap with schema extensions;
\ir _helpers.sql

-- ---------------------------------------------------------------------------------------
-- People: O owns every pack, S is shared P1, B bought P3 and R, X is a stranger, A a super admin.
select tests.create_user(to_jsonb(u)) from (values 
  ('c8000000-0000-4000-8000-000000000001', 'pgtap-tp-owner@example.test'),
  ('c8000000-0000-4000-8000-000000000002', 'pgtap-tp-sharee@example.test'),
  ('c8000000-0000-4000-8000-000000000003', 'pgtap-tp-buyer@example.test'),
  ('c8000000-0000-4000-8000-000000000004', 'pgtap-tp-stranger@example.test'),
  ('c8000000-0000-4000-8000-000000000005', 'pgtap-tp-super@example.test')) u (id, email);
update public.profiles set role = 'super_admin' where id = 'c8000000-0000-4000-8000-000000000005';

create temp table callers (who text primary key, role text, sub uuid, i integer);
insert into callers values
  ('owner', 'authenticated', 'c8000000-0000-4000-8000-000000000001', 1),
  ('sharee', 'authenticated', 'c8000000-0000-4000-8000-000000000002', 2),
  ('buyer', 'authenticated', 'c8000000-0000-4000-8000-000000000003', 3),
  ('stranger', 'authenticated', 'c8000000-0000-4000-8000-000000000004', 4),
  ('super_admin', 'authenticated', 'c8000000-0000-4000-8000-000000000005', 5),
  ('anon', 'anon', null, 6);
grant select on callers to public;

-- Runs a statement as a caller; returns its single value as text, or 'error <sqlstate>'.
-- Unless `keep`, it runs inside a savepoint that is always rolled back.
create function pg_temp.as_caller(who text, statement text, keep boolean default false) returns text
language plpgsql as $$
declare
  c callers;
  result text;
begin
  select * into c from callers where callers.who = as_caller.who;
  perform set_config('request.jwt.claims', json_build_object('role', c.role, 'sub', c.sub)::text, true);
  execute format('set local role %I', c.role);
  begin
    execute statement into result;
    if not keep then
      raise exception using errcode = 'ZZ000', message = coalesce(result, '<null>');
    end if;
  exception
    when sqlstate 'ZZ000' then result := sqlerrm;
    when others then result := 'error ' || sqlstate;
  end;
  reset role;
  perform set_config('request.jwt.claims', '', true);
  return result;
end
$$;
grant execute on function pg_temp.as_caller(text, text, boolean) to public;

-- Packs of O:
--   P1 c8...101  private, free, shared with S
--   P2 c8...102  public, free
--   P3 c8...103  public, 10 drops, bought by B
--   R  c8...104  public, 10 drops, bought by B, then deleted by O: retired
--   P5 c8...105  public, 45 drops
insert into public.tone_packs (id, owner_id, name, theme, is_public, price_drops) values
  ('c8000000-0000-4000-8000-000000000101', 'c8000000-0000-4000-8000-000000000001', 'P1', 'origami', false, 0),
  ('c8000000-0000-4000-8000-000000000102', 'c8000000-0000-4000-8000-000000000001', 'P2', 'nature', true, 0),
  ('c8000000-0000-4000-8000-000000000103', 'c8000000-0000-4000-8000-000000000001', 'P3', 'animals', true, 10),
  ('c8000000-0000-4000-8000-000000000104', 'c8000000-0000-4000-8000-000000000001', 'R', 'shapes', true, 10),
  ('c8000000-0000-4000-8000-000000000105', 'c8000000-0000-4000-8000-000000000001', 'P5', 'icons', true, 45);
insert into public.tone_pack_shares (pack_id, user_id) values
  ('c8000000-0000-4000-8000-000000000101', 'c8000000-0000-4000-8000-000000000002');
-- One image (joyful) per pack, and one loose object of O's that no pack shows.
insert into storage.objects (bucket_id, name, owner_id)
select 'tone-packs', 'c8000000-0000-4000-8000-000000000001/' || p.id || '/joyful-1.png', 'c8000000-0000-4000-8000-000000000001'
  from public.tone_packs p where p.id::text like 'c8000000-%'
union all
select 'tone-packs', 'c8000000-0000-4000-8000-000000000001/loose.png', 'c8000000-0000-4000-8000-000000000001';
insert into public.tone_pack_images (pack_id, tone, object_name, url)
select p.id, 'joyful', o.name, 'http://icons.test/storage/v1/object/public/tone-packs/' || o.name
  from public.tone_packs p join storage.objects o on o.name = 'c8000000-0000-4000-8000-000000000001/' || p.id || '/joyful-1.png'
 where p.id::text like 'c8000000-%';

select plan(350);
-- The rows of storage.objects the matrix deletes are deleted as Storage deletes them (its
-- queries set storage.allow_delete_query): the policies decide how many.
select set_config('storage.allow_delete_query', 'true', true);

select is(pg_temp.as_caller('buyer', $$select public.purchase_tone_pack('c8000000-0000-4000-8000-000000000103') #>> '{purchase,price_drops}'$$, true),
  '10', 'fixture: B buys P3 for 10');
select is(pg_temp.as_caller('buyer', $$select public.purchase_tone_pack('c8000000-0000-4000-8000-000000000104') #>> '{purchase,price_drops}'$$, true),
  '10', 'fixture: B buys R for 10');
select is(pg_temp.as_caller('owner', $$select public.delete_tone_pack('c8000000-0000-4000-8000-000000000104') ->> 'result'$$, true),
  'retired', 'fixture: O deletes R, which B bought: retired');
-- Active packs: O and S use P1, B uses P3, X uses P2 (A: none).
update public.profiles set preferences = preferences || '{"active_tone_pack_id": "c8000000-0000-4000-8000-000000000101"}'
 where id in ('c8000000-0000-4000-8000-000000000001', 'c8000000-0000-4000-8000-000000000002');
update public.profiles set preferences = preferences || '{"active_tone_pack_id": "c8000000-0000-4000-8000-000000000103"}'
 where id = 'c8000000-0000-4000-8000-000000000003';
update public.profiles set preferences = preferences || '{"active_tone_pack_id": "c8000000-0000-4000-8000-000000000102"}'
 where id = 'c8000000-0000-4000-8000-000000000004';

-- ---------------------------------------------------------------------------------------
-- The matrix: (what, statement, expected for owner, sharee, buyer, stranger, super admin, anon).
create temp table cases (ord serial, what text, statement text, expected text[]);
insert into cases (what, statement, expected) values
  -- Reading: tables (RLS) and get_tone_pack.
  ('sees P1 (private, shared with S)', $$select count(*) from public.tone_packs where id = 'c8000000-0000-4000-8000-000000000101'$$,
   array['1', '1', '0', '0', '1', 'error 42501']),
  ('sees P2 (public, free)', $$select count(*) from public.tone_packs where id = 'c8000000-0000-4000-8000-000000000102'$$,
   array['1', '1', '1', '1', '1', 'error 42501']),
  ('sees P3 (public, priced)', $$select count(*) from public.tone_packs where id = 'c8000000-0000-4000-8000-000000000103'$$,
   array['1', '1', '1', '1', '1', 'error 42501']),
  ('sees R (retired, bought by B)', $$select count(*) from public.tone_packs where id = 'c8000000-0000-4000-8000-000000000104'$$,
   array['0', '0', '1', '0', '1', 'error 42501']),
  ('reads P1''s images', $$select count(*) from public.tone_pack_images where pack_id = 'c8000000-0000-4000-8000-000000000101'$$,
   array['1', '1', '0', '0', '1', 'error 42501']),
  ('reads R''s images', $$select count(*) from public.tone_pack_images where pack_id = 'c8000000-0000-4000-8000-000000000104'$$,
   array['0', '0', '1', '0', '1', 'error 42501']),
  ('reads P1''s shares', $$select count(*) from public.tone_pack_shares where pack_id = 'c8000000-0000-4000-8000-000000000101'$$,
   array['1', '1', '0', '0', '1', 'error 42501']),
  ('reads the fixture''s purchases', $$select count(*) from public.tone_pack_purchases where user_id::text like 'c8000000-%'$$,
   array['0', '0', '2', '0', '2', 'error 42501']),
  ('get_tone_pack(P1)', $$select public.get_tone_pack('c8000000-0000-4000-8000-000000000101') ->> 'name'$$,
   array['P1', 'P1', 'error PT404', 'error PT404', 'P1', 'error 42501']),
  ('get_tone_pack(R)', $$select public.get_tone_pack('c8000000-0000-4000-8000-000000000104') ->> 'name'$$,
   array['error PT404', 'error PT404', 'R', 'error PT404', 'R', 'error 42501']),
  ('get_tone_pack(P3): can_buy', $$select public.get_tone_pack('c8000000-0000-4000-8000-000000000103') ->> 'can_buy'$$,
   array['false', 'true', 'false', 'true', 'true', 'error 42501']),
  ('get_tone_pack(P3): can_use', $$select public.get_tone_pack('c8000000-0000-4000-8000-000000000103') ->> 'can_use'$$,
   array['true', 'false', 'true', 'false', 'false', 'error 42501']),
  ('list_tone_packs: fixture packs listed', $$select string_agg(pack ->> 'name', ',' order by pack ->> 'name') from public.list_tone_packs(null, null, 101) where id::text like 'c8000000-%'$$,
   array['P1,P2,P3,P5', 'P1,P2,P3,P5', 'P2,P3,P5,R', 'P2,P3,P5', 'P2,P3,P5', 'error 42501']),
  ('list_tone_pack_purchases', $$select string_agg(purchase ->> 'pack_name', ',' order by purchase ->> 'pack_name') from public.list_tone_pack_purchases(null, null, 101)$$,
   array['<null>', '<null>', 'P3,R', '<null>', '<null>', 'error 42501']),
  -- Activation (the caller's own preferences).
  ('activates P1', $$select public.activate_tone_pack('c8000000-0000-4000-8000-000000000101') ->> 'active_tone_pack_id'$$,
   array['c8000000-0000-4000-8000-000000000101', 'c8000000-0000-4000-8000-000000000101', 'error PT404', 'error PT404', 'error 42501', 'error 42501']),
  ('activates P2 (public, free)', $$select public.activate_tone_pack('c8000000-0000-4000-8000-000000000102') ->> 'active_tone_pack_id'$$,
   array['c8000000-0000-4000-8000-000000000102', 'c8000000-0000-4000-8000-000000000102', 'c8000000-0000-4000-8000-000000000102',
         'c8000000-0000-4000-8000-000000000102', 'c8000000-0000-4000-8000-000000000102', 'error 42501']),
  ('activates P3 (priced: buyers and the owner)', $$select public.activate_tone_pack('c8000000-0000-4000-8000-000000000103') ->> 'active_tone_pack_id'$$,
   array['c8000000-0000-4000-8000-000000000103', 'error 42501', 'c8000000-0000-4000-8000-000000000103', 'error 42501', 'error 42501', 'error 42501']),
  ('activates R (retired: its buyers)', $$select public.activate_tone_pack('c8000000-0000-4000-8000-000000000104') ->> 'active_tone_pack_id'$$,
   array['error PT404', 'error PT404', 'c8000000-0000-4000-8000-000000000104', 'error PT404', 'error 42501', 'error 42501']),
  ('PATCHes own preferences to P3', $$with u as (update public.profiles set preferences = preferences || '{"active_tone_pack_id": "c8000000-0000-4000-8000-000000000103"}' where id = (select auth.uid()) returning 1) select count(*) from u$$,
   array['1', 'error 22023', '1', 'error 22023', 'error 22023', 'error 42501']),
  -- Changing packs.
  ('creates a pack of its own', $$with i as (insert into public.tone_packs (name, theme) values ('mine', 'nature') returning owner_id = (select auth.uid())) select bool_and(i.owner_id) from i as i(owner_id)$$,
   array['true', 'true', 'true', 'true', 'true', 'error 42501']),
  ('creates a pack in O''s name', $$with i as (insert into public.tone_packs (owner_id, name, theme) values ('c8000000-0000-4000-8000-000000000001', 'x', 'nature') returning 1) select count(*) from i$$,
   array['1', 'error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
  ('renames P1', $$with u as (update public.tone_packs set name = 'renamed' where id = 'c8000000-0000-4000-8000-000000000101' returning 1) select count(*) from u$$,
   array['1', '0', '0', '0', '0', 'error 42501']),
  ('renames P2', $$with u as (update public.tone_packs set name = 'renamed' where id = 'c8000000-0000-4000-8000-000000000102' returning 1) select count(*) from u$$,
   array['1', '0', '0', '0', '0', 'error 42501']),
  ('renames R', $$with u as (update public.tone_packs set name = 'renamed' where id = 'c8000000-0000-4000-8000-000000000104' returning 1) select count(*) from u$$,
   array['0', '0', '0', '0', '0', 'error 42501']),
  ('moves P1 to another owner', $$with u as (update public.tone_packs set owner_id = (select auth.uid()) where id = 'c8000000-0000-4000-8000-000000000101' returning 1) select count(*) from u$$,
   array['error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
  ('deletes P1 directly', $$with d as (delete from public.tone_packs where id = 'c8000000-0000-4000-8000-000000000101' returning 1) select count(*) from d$$,
   array['error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
  ('delete_tone_pack(P1)', $$select public.delete_tone_pack('c8000000-0000-4000-8000-000000000101') ->> 'result'$$,
   array['deleted', 'error 42501', 'error PT404', 'error PT404', 'error 42501', 'error 42501']),
  ('delete_tone_pack(P3, bought)', $$select public.delete_tone_pack('c8000000-0000-4000-8000-000000000103') ->> 'result'$$,
   array['retired', 'error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
  -- Sharing.
  ('shares P2 with X', $$select public.share_tone_pack('c8000000-0000-4000-8000-000000000102', 'c8000000-0000-4000-8000-000000000004') ->> 'created'$$,
   array['true', 'error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
  ('shares P1 with B by e-mail', $$select public.share_tone_pack('c8000000-0000-4000-8000-000000000101', null, 'PGTAP-TP-BUYER@example.test') ->> 'user_id'$$,
   array['c8000000-0000-4000-8000-000000000003', 'error 42501', 'error PT404', 'error PT404', 'error 42501', 'error 42501']),
  ('shares P1 with an unknown e-mail', $$select public.share_tone_pack('c8000000-0000-4000-8000-000000000101', null, 'nobody@example.test') ->> 'user_id'$$,
   array['error PT404', 'error 42501', 'error PT404', 'error PT404', 'error 42501', 'error 42501']),
  ('shares P1 with its owner', $$select public.share_tone_pack('c8000000-0000-4000-8000-000000000101', 'c8000000-0000-4000-8000-000000000001') ->> 'created'$$,
   array['error 22023', 'error 42501', 'error PT404', 'error PT404', 'error 42501', 'error 42501']),
  ('unshares P1 from S', $$select public.unshare_tone_pack('c8000000-0000-4000-8000-000000000101', 'c8000000-0000-4000-8000-000000000002')::text$$,
   array['true', 'error 42501', 'error PT404', 'error PT404', 'error 42501', 'error 42501']),
  ('inserts a share directly', $$insert into public.tone_pack_shares (pack_id, user_id) values ('c8000000-0000-4000-8000-000000000102', (select auth.uid())) returning 'inserted'$$,
   array['error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
  -- Buying (balances: everyone 50, B 30 after the fixture).
  ('buys P1 (free, shared with S)', $$select public.purchase_tone_pack('c8000000-0000-4000-8000-000000000101') #>> '{purchase,price_drops}'$$,
   array['error PT409', '0', 'error PT404', 'error PT404', 'error PT404', 'error 42501']),
  ('buys P3 (10)', $$select public.purchase_tone_pack('c8000000-0000-4000-8000-000000000103') ->> 'balance'$$,
   array['error PT409', '40', 'error PT409', '40', '40', 'error 42501']),
  ('buys R (retired)', $$select public.purchase_tone_pack('c8000000-0000-4000-8000-000000000104') ->> 'balance'$$,
   array['error PT404', 'error PT404', 'error PT409', 'error PT404', 'error PT404', 'error 42501']),
  ('buys P5 (45)', $$select public.purchase_tone_pack('c8000000-0000-4000-8000-000000000105') ->> 'balance'$$,
   array['error PT409', '5', 'error PT402', '5', '5', 'error 42501']),
  ('inserts a purchase directly', $$insert into public.tone_pack_purchases (pack_id, user_id, pack_name, price_drops) values ('c8000000-0000-4000-8000-000000000105', (select auth.uid()), 'P5', 0) returning 'inserted'$$,
   array['error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
  -- Images: only through set_tone_pack_image, which only the service role (the api) calls.
  ('inserts an image directly', $$insert into public.tone_pack_images (pack_id, tone, object_name, url) values ('c8000000-0000-4000-8000-000000000102', 'sad', 'x', 'http://x/x') returning 'inserted'$$,
   array['error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
  ('calls set_tone_pack_image', $$select public.set_tone_pack_image('c8000000-0000-4000-8000-000000000001', 'c8000000-0000-4000-8000-000000000102', 'joyful', 'c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000102/joyful-1.png', 'http://elsewhere.example/c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000102/joyful-1.png') ->> 'tone'$$,
   array['error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
  -- The bucket's policies: the api (service role) writes it after checking the bytes; no client writes.
  ('uploads into its own folder', $$with i as (insert into storage.objects (bucket_id, name) values ('tone-packs', (select auth.uid())::text || '/p/joyful-2.png') returning 1) select count(*) from i$$,
   array['error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
  ('uploads into O''s folder', $$with i as (insert into storage.objects (bucket_id, name) values ('tone-packs', 'c8000000-0000-4000-8000-000000000001/p/joyful-3.png') returning 1) select count(*) from i$$,
   array['error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
  ('rewrites P3''s bought image object', $$with u as (update storage.objects set metadata = '{"mimetype": "text/html"}' where bucket_id = 'tone-packs' and name like 'c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000103/%' returning 1) select count(*) from u$$,
   array['0', '0', '0', '0', '0', '0']),
  ('deletes O''s loose object', $$with d as (delete from storage.objects where bucket_id = 'tone-packs' and name = 'c8000000-0000-4000-8000-000000000001/loose.png' returning 1) select count(*) from d$$,
   array['0', '0', '0', '0', '0', '0']),
  ('reads the images it bought', $$select count(*) from public.tone_pack_purchase_images k join public.tone_pack_purchases b on b.id = k.purchase_id where b.user_id::text like 'c8000000-%'$$,
   array['0', '0', '2', '0', '2', 'error 42501']),
  ('writes a bought image', $$insert into public.tone_pack_purchase_images (purchase_id, tone, object_name, url, updated_at) select b.id, 'sad', 'x', 'http://x/x', now() from public.tone_pack_purchases b limit 1 returning 'inserted'$$,
   array['error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501', 'error 42501']),
  ('buys P5 at a price it did not see', $$select public.purchase_tone_pack('c8000000-0000-4000-8000-000000000105', null, 40) ->> 'balance'$$,
   array['error PT409', 'error PT409', 'error PT409', 'error PT409', 'error PT409', 'error 42501']),
  ('deletes P2''s current image object', $$with d as (delete from storage.objects where bucket_id = 'tone-packs' and name like 'c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000102/%' returning 1) select count(*) from d$$,
   array['0', '0', '0', '0', '0', '0']),
  -- The entry seam: the viewer's active pack's image for a mood, while they may use it.
  ('tone_icon_url(joyful)', $$select coalesce(private.tone_icon_url('joyful'), 'none')$$,
   array['http://icons.test/storage/v1/object/public/tone-packs/c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000101/joyful-1.png',
         'http://icons.test/storage/v1/object/public/tone-packs/c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000101/joyful-1.png',
         'http://icons.test/storage/v1/object/public/tone-packs/c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000103/joyful-1.png',
         'http://icons.test/storage/v1/object/public/tone-packs/c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000102/joyful-1.png',
         'none', 'none']),
  ('tone_icon_url(sad): no image for that tone', $$select coalesce(private.tone_icon_url('sad'), 'none')$$,
   array['none', 'none', 'none', 'none', 'none', 'none']),
  ('tone_icon_url(null)', $$select coalesce(private.tone_icon_url(null), 'none')$$,
   array['none', 'none', 'none', 'none', 'none', 'none']),
  ('the icon helper itself', $$select coalesce(private.active_tone_icon_url('sad'), 'none')$$,
   array['none', 'none', 'none', 'none', 'none', 'error 42501']);

select is(pg_temp.as_caller(c.who, k.statement), k.expected[c.i], format('%s: %s', c.who, k.what))
  from cases k cross join callers c
 order by k.ord, c.i;

-- ---------------------------------------------------------------------------------------
-- Revoked use: S's preference still names P1 once unshared, but the seam shows nothing; an
-- unpublished free pack stops showing for a user who only used it (X on P2).
select is(pg_temp.as_caller('owner', $$select public.unshare_tone_pack('c8000000-0000-4000-8000-000000000101', 'c8000000-0000-4000-8000-000000000002')::text$$, true),
  'true', 'O unshares P1 from S');
select is(pg_temp.as_caller('sharee', $$select coalesce(private.tone_icon_url('joyful'), 'none')$$), 'none',
  'S: no icon from a pack no longer shared');
select is((select preferences ->> 'active_tone_pack_id' from public.profiles where id = 'c8000000-0000-4000-8000-000000000002'),
  'c8000000-0000-4000-8000-000000000101', 'the preference itself is left as it was');
select is(pg_temp.as_caller('owner', $$with u as (update public.tone_packs set is_public = false where id = 'c8000000-0000-4000-8000-000000000102' returning 1) select count(*) from u$$, true),
  '1', 'O unpublishes P2');
select is(pg_temp.as_caller('stranger', $$select coalesce(private.tone_icon_url('joyful'), 'none')$$), 'none',
  'X: no icon from an unpublished free pack');
select is(pg_temp.as_caller('buyer', $$select coalesce(private.tone_icon_url('joyful'), 'none')$$),
  'http://icons.test/storage/v1/object/public/tone-packs/c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000103/joyful-1.png',
  'B keeps the icon of a bought pack');
select throws_ok($$update public.profiles set preferences = preferences || '{"active_tone_pack_id": "c8000000-0000-4000-8000-000000000105"}'
                    where id = 'c8000000-0000-4000-8000-000000000004'$$,
  '22023', null, 'even the SQL dashboard cannot point a preference at a pack its user may not use');

-- ---------------------------------------------------------------------------------------
-- Purchases under the ledger invariant.
select is(pg_temp.as_caller('stranger', $$select public.purchase_tone_pack('c8000000-0000-4000-8000-000000000103', 'key-1') ->> 'replayed'$$, true),
  'false', 'X buys P3 with an idempotency key');
select is(pg_temp.as_caller('stranger', $$select public.purchase_tone_pack('c8000000-0000-4000-8000-000000000103', 'key-1') ->> 'replayed'$$, true),
  'true', 'the same key again: the first purchase, replayed');
select is(pg_temp.as_caller('stranger', $$select public.purchase_tone_pack('c8000000-0000-4000-8000-000000000103') ->> 'balance'$$, true),
  'error PT409', 'without the key: already bought');
select is(pg_temp.as_caller('stranger', $$select public.purchase_tone_pack('c8000000-0000-4000-8000-000000000105', 'key-1') ->> 'balance'$$, true),
  'error PT422', 'the key names another purchase');
select is(pg_temp.as_caller('stranger', $$select public.purchase_tone_pack('c8000000-0000-4000-8000-000000000105') ->> 'balance'$$, true),
  'error PT402', 'X has 40, P5 costs 45');
select is(pg_temp.as_caller('buyer', $$select public.purchase_tone_pack('c8000000-0000-4000-8000-000000000105')::text$$, true),
  'error PT402', 'B has 30, P5 costs 45');
select is((select count(*)::int from public.drops_transactions where type = 'purchase' and user_id::text like 'c8000000-%'),
  3, 'three charges: B twice, X once; refusals and replays wrote nothing');
select is((select array_agg(amount order by id) from public.drops_transactions where type = 'purchase' and user_id = 'c8000000-0000-4000-8000-000000000004'),
  array[-10], 'X was charged once');
select is((select count(*)::int from public.profiles p where p.id::text like 'c8000000-%'
            and p.drops_balance <> (select coalesce(sum(t.amount), 0) from public.drops_transactions t where t.user_id = p.id)),
  0, 'every balance equals the sum of its ledger deltas');
select is((select count(*)::int from public.tone_pack_purchases b
            where b.user_id::text like 'c8000000-%' and b.price_drops > 0
              and not exists (select 1 from public.drops_transactions t
                               where t.id = b.transaction_id and t.user_id = b.user_id and t.amount = -b.price_drops
                                 and t.type = 'purchase' and t.item_id = b.pack_id and t.item_type = 'tone_pack')),
  0, 'every paid purchase has its own ledger row: -price, type purchase, the pack as item');
select is((select string_agg(id || ':' || drops_balance, ',' order by id) from public.profiles where id::text like 'c8000000-%'),
  'c8000000-0000-4000-8000-000000000001:50,c8000000-0000-4000-8000-000000000002:50,c8000000-0000-4000-8000-000000000003:30,c8000000-0000-4000-8000-000000000004:40,c8000000-0000-4000-8000-000000000005:50',
  'the seller received nothing');
select is((select count(*)::int from public.tone_pack_purchases where pack_id = 'c8000000-0000-4000-8000-000000000104'),
  1, 'the retired pack''s purchase is kept');
select throws_ok($$delete from public.drops_transactions where user_id = 'c8000000-0000-4000-8000-000000000003'$$,
  '42501', null, 'the buyer''s ledger rows cannot be removed');

-- set_tone_pack_image as the service role: only an object that exists, in the owner's folder
-- for that pack and tone, for the pack's owner.
insert into callers values ('service_role', 'service_role', null, 7);
select is(pg_temp.as_caller('service_role', $$select public.set_tone_pack_image('c8000000-0000-4000-8000-000000000001', 'c8000000-0000-4000-8000-000000000102', 'sad', 'c8000000-0000-4000-8000-000000000001/loose.png', 'http://x/c8000000-0000-4000-8000-000000000001/loose.png') ->> 'tone'$$),
  'error 22023', 'service role: an object outside the pack''s folder for the tone is refused');
select is(pg_temp.as_caller('service_role', $$select public.set_tone_pack_image('c8000000-0000-4000-8000-000000000001', 'c8000000-0000-4000-8000-000000000102', 'sad', 'c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000102/sad-1.png', 'http://x/c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000102/sad-1.png') ->> 'tone'$$),
  'error 22023', 'service role: an object that is not stored is refused');
select is(pg_temp.as_caller('service_role', $$select public.set_tone_pack_image('c8000000-0000-4000-8000-000000000004', 'c8000000-0000-4000-8000-000000000102', 'joyful', 'c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000102/joyful-1.png', 'http://x/c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000102/joyful-1.png') ->> 'tone'$$),
  'error PT404', 'service role: for someone who does not own the pack, not found');
select is(pg_temp.as_caller('service_role', $$select public.set_tone_pack_image('c8000000-0000-4000-8000-000000000001', 'c8000000-0000-4000-8000-000000000102', 'joyful', 'c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000102/joyful-1.png', 'http://x/c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000102/joyful-1.png') ->> 'previous_object'$$),
  '<null>', 'service role: the owner''s own stored object is mapped (nothing replaced when it is the same object)');

-- Replacing an image a buyer holds: the owner sees the new one, buyers keep theirs, and the
-- old object is not handed back for deletion.
insert into storage.objects (bucket_id, name, owner_id) values
  ('tone-packs', 'c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000103/joyful-2.png', 'c8000000-0000-4000-8000-000000000001');
select is(pg_temp.as_caller('service_role', $$select public.set_tone_pack_image('c8000000-0000-4000-8000-000000000001', 'c8000000-0000-4000-8000-000000000103', 'joyful', 'c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000103/joyful-2.png', 'http://icons.test/storage/v1/object/public/tone-packs/c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000103/joyful-2.png') ->> 'previous_object'$$, true),
  null, 'service role: replacing an image buyers hold keeps its object');
select is(pg_temp.as_caller('owner', $$select public.get_tone_pack('c8000000-0000-4000-8000-000000000103') #>> '{images,0,url}'$$),
  'http://icons.test/storage/v1/object/public/tone-packs/c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000103/joyful-2.png',
  'the owner sees the new image');
select is(pg_temp.as_caller('buyer', $$select public.get_tone_pack('c8000000-0000-4000-8000-000000000103') #>> '{images,0,url}'$$),
  'http://icons.test/storage/v1/object/public/tone-packs/c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000103/joyful-1.png',
  'the buyer keeps the image they bought');
select is(pg_temp.as_caller('buyer', $$select private.tone_icon_url('joyful')$$),
  'http://icons.test/storage/v1/object/public/tone-packs/c8000000-0000-4000-8000-000000000001/c8000000-0000-4000-8000-000000000103/joyful-1.png',
  'and on their entries');

-- The bucket as SPEC sets it.
select is((select row(public, file_size_limit, allowed_mime_types)::text from storage.buckets where id = 'tone-packs'),
  row(true, 5242880::bigint, array['image/png', 'image/jpeg', 'image/jpg', 'image/webp'])::text,
  'bucket tone-packs: public, 5 MB, PNG/JPEG/JPG/WEBP');

select * from finish();
rollback;
