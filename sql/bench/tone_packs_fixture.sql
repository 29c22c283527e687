-- Benchmark fixture for tone packs (issue 8). Loaded with the triggers on (signup bonus,
-- ledger), so balances are real ledger sums.
--   seller     d8000000-...-000000000001: owns every pack
--   storm A    users 0x101..0x164 (100): buy through /api/tone-packs/:id/purchase, packs A1..A8
--   storm B    users 0x201..0x264 (100): buy through PostgREST rpc/purchase_tone_pack, packs B1..B8
--              In each storm, odd users hold 1,000 drops, even users 45: a pack costs 20.
--   viewers    0x301 (active pack with an image for each of the 20 tones), 0x302 (no active
--              pack): 50 entries each, moods cycling through the 20 tones.
begin;

insert into auth.users (id, email)
select ('d8000000-0000-4000-8000-' || lpad(to_hex(n), 12, '0'))::uuid, 'bench-tp-' || n || '@bench.local'
  from (select 1 as n union all select generate_series(257, 356) union all select generate_series(513, 612)
        union all select generate_series(769, 770)) g;

-- Balances: odd users 50 + 950, even users 50 - 5 (ledger rows, so the balance is their sum).
select public.admin_adjust_drops(p.id, case when (('x' || right(p.id::text, 8))::bit(32)::int) % 2 = 1 then 950 else -5 end,
                                 'bench fixture', 'bench')
  from public.profiles p
 where p.id::text like 'd8000000-%' and right(p.id::text, 3) between '101' and '264';

insert into public.tone_packs (id, owner_id, name, theme, is_public, price_drops)
select ('d8000000-0000-4000-8000-0000000a' || lpad(to_hex(s * 16 + k), 4, '0'))::uuid,
       'd8000000-0000-4000-8000-000000000001', chr(64 + s) || k, 'geometric', true, 20
  from generate_series(1, 2) s, generate_series(1, 8) k;

-- The viewers' pack: an image per tone; viewer 0x301 activates it.
insert into public.tone_packs (id, owner_id, name, theme, is_public, price_drops)
values ('d8000000-0000-4000-8000-0000000b0001', 'd8000000-0000-4000-8000-000000000001', 'Icons', 'icons', true, 0);
insert into storage.objects (bucket_id, name, owner_id)
select 'tone-packs', 'd8000000-0000-4000-8000-000000000001/d8000000-0000-4000-8000-0000000b0001/' || t || '-1.png',
       'd8000000-0000-4000-8000-000000000001'
  from unnest(array['joyful', 'grateful', 'excited', 'hopeful', 'content', 'peaceful', 'optimistic', 'sad', 'anxious',
                    'frustrated', 'angry', 'worried', 'disappointed', 'melancholic', 'pessimistic', 'calm',
                    'contemplative', 'neutral', 'tired', 'energetic']) t;
insert into public.tone_pack_images (pack_id, tone, object_name, url)
select 'd8000000-0000-4000-8000-0000000b0001', split_part(split_part(o.name, '/', 3), '-', 1), o.name,
       'http://bench.local/storage/v1/object/public/tone-packs/' || o.name
  from storage.objects o where o.bucket_id = 'tone-packs' and o.name like '%/d8000000-0000-4000-8000-0000000b0001/%';
update public.profiles set preferences = preferences || '{"active_tone_pack_id": "d8000000-0000-4000-8000-0000000b0001"}'
 where id = 'd8000000-0000-4000-8000-000000000301';

insert into public.journal_entries (user_id, title, mood, created_at)
select v.id, 'Entry ' || g, (array['joyful', 'grateful', 'excited', 'hopeful', 'content', 'peaceful', 'optimistic', 'sad',
                                   'anxious', 'frustrated', 'angry', 'worried', 'disappointed', 'melancholic', 'pessimistic',
                                   'calm', 'contemplative', 'neutral', 'tired', 'energetic'])[1 + g % 20],
       now() - g * interval '1 minute'
  from (values ('d8000000-0000-4000-8000-000000000301'::uuid), ('d8000000-0000-4000-8000-000000000302'::uuid)) v(id),
       generate_series(1, 50) g;

commit;
