-- Tone pack integrity and AI spending (issue 20: findings 4, 7, 8 and the background-name
-- collision). What this migration makes true, on every path:
--
--   * Buyers keep what they bought. A purchase records the pack's images as they are at that
--     moment (tone_pack_purchase_images). An owner who later replaces a tone's image changes
--     it for themselves, sharees, the public and later buyers, never for an earlier buyer; a
--     tone the pack did not have yet reaches every buyer when it is first added (and then
--     stays as they got it). An object some buyer holds is never deleted.
--   * The tone-packs bucket is written only by the api (service role), which checks the
--     bytes of every image: no storage policy lets a client insert, replace or delete there.
--     (Supabase Storage checks only the declared Content-Type of an upload, never its bytes,
--     so a policy is the rule that holds on hosted projects too.)
--   * A purchase charges a price the buyer could have seen: purchase_tone_pack takes
--     expected_price_drops and refuses (409) when the price differs; a purchase that names no
--     price is accepted only while the pack's price never changed since its creation.
--   * Every paid AI call the api makes claims its place under a per-user daily cap first, per
--     image, atomically (claim_ai_calls); a call the provider did not bill gives its place back
--     (release_ai_calls, the api's only); a billed call counts, whatever fails after it (the
--     database never gives back a place some recorded usage row stands for). Tone pack images
--     get a default cap.

-- ---------------------------------------------------------------------------------------
-- Daily caps: claims of several calls at once, a cap the api may set, and giving back.

-- Default caps (SPEC leaves them open): tone pack images had none. 40 is two full packs a
-- day. An operator's own setting is kept.
update private.ai_usage_types set daily_cap_per_user = 40
 where usage_type = 'tone_pack_image' and daily_cap_per_user is null;

/*
 * Claims up to `wanted` calls of a usage type against a user's cap for today (UTC) and
 * returns {granted (0..wanted), day, counted}. The cap is `daily_cap` when given (0: no cap;
 * the api passes AI_DAILY_CAP_<TYPE>), else private.ai_usage_types' (null: no cap, 0: none
 * allowed). Concurrent claims of one user and type are serialized on the counter row, so
 * together they never pass the cap. Uncapped claims are not counted (counted: false).
 */
create or replace function private.claim_ai_calls(target_user_id uuid, usage_type text, wanted integer, daily_cap integer)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  today constant date := (now() at time zone 'UTC')::date;
  cap integer;
  used integer;
  granted integer;
begin
  -- A user may spend only their own cap (the service role counts anyone's).
  if target_user_id is distinct from (select auth.uid()) and not private.is_trusted_caller() then
    raise exception 'only your own AI calls are counted' using errcode = '42501';
  end if;
  if wanted is null or wanted not between 1 and 100 then
    raise exception 'wanted: must be between 1 and 100' using errcode = '22023';
  end if;
  if daily_cap < 0 then
    raise exception 'daily_cap: must be 0 (no cap) or more' using errcode = '22023';
  end if;
  select t.daily_cap_per_user into cap from private.ai_usage_types t where t.usage_type = claim_ai_calls.usage_type;
  if not found then
    raise exception 'usage_type: unknown type %', claim_ai_calls.usage_type using errcode = '22023';
  end if;
  if daily_cap is not null then
    cap := nullif(daily_cap, 0);
  end if;
  if cap is null then
    return jsonb_build_object('granted', wanted, 'day', today, 'counted', false);
  end if;
  insert into private.ai_daily_calls as d (user_id, day, usage_type, calls)
  values (target_user_id, today, claim_ai_calls.usage_type, 0)
  on conflict on constraint ai_daily_calls_pkey do nothing;
  select d.calls into used from private.ai_daily_calls d
   where d.user_id = target_user_id and d.day = today and d.usage_type = claim_ai_calls.usage_type
     for update;
  granted := greatest(0, least(wanted, cap - used));
  if granted > 0 then
    update private.ai_daily_calls d set calls = d.calls + granted
     where d.user_id = target_user_id and d.day = today and d.usage_type = claim_ai_calls.usage_type;
  end if;
  return jsonb_build_object('granted', granted, 'day', today, 'counted', true);
end
$$;
grant execute on function private.claim_ai_calls(uuid, text, integer, integer) to authenticated, service_role;

create or replace function public.claim_ai_calls(usage_type text, wanted integer default 1, daily_cap integer default null)
returns jsonb
language plpgsql
set search_path = ''
as $$
begin
  if (select auth.uid()) is null then
    raise exception 'a signed-in user is required' using errcode = '42501';
  end if;
  return private.claim_ai_calls((select auth.uid()), claim_ai_calls.usage_type, wanted, daily_cap);
end
$$;
comment on function public.claim_ai_calls(text, integer, integer) is
  'Claims up to `wanted` AI calls (images) against the caller''s daily cap for the type: {granted, day, counted}. daily_cap overrides the default (0: no cap); it only ever concerns the caller''s own counter.';
grant execute on function public.claim_ai_calls(text, integer, integer) to authenticated;

-- Supersedes private.claim_ai_call of 20261122010000_ai_usage.sql: one call, the default cap.
create or replace function private.claim_ai_call(target_user_id uuid, usage_type text) returns boolean
language sql
set search_path = ''
as $$ select (private.claim_ai_calls($1, $2, 1, null) ->> 'granted')::integer = 1 $$;

/*
 * Gives claimed calls back (calls the provider did not bill), on the day they were claimed.
 * A billed call counts whatever happens after it (a caller can make our side fail on purpose,
 * by deleting the pack or entry mid-call): the counter never drops below the calls recorded in
 * ai_usage for that user, type and day, nor below zero. The service role only: a user who
 * could give calls back could spend past the cap.
 */
create or replace function private.release_ai_calls(target_user_id uuid, usage_type text, day date, calls integer)
returns integer
language plpgsql security definer
set search_path = ''
as $$
declare
  billed integer;
  left_today integer;
begin
  if calls is null or calls not between 1 and 100 then
    raise exception 'calls: must be between 1 and 100' using errcode = '22023';
  end if;
  -- Lock the counter first: a usage row recorded after this read belongs to a call still
  -- holding its place, which this release does not touch.
  perform 1 from private.ai_daily_calls d
   where d.user_id = target_user_id and d.day = release_ai_calls.day and d.usage_type = release_ai_calls.usage_type
     for update;
  if not found then
    return 0;
  end if;
  select count(*) into billed from public.ai_usage u
   where u.user_id = target_user_id and u.usage_type = release_ai_calls.usage_type
     and u.created_at >= release_ai_calls.day::timestamp at time zone 'UTC'
     and u.created_at < (release_ai_calls.day + 1)::timestamp at time zone 'UTC';
  update private.ai_daily_calls d
     set calls = greatest(0, d.calls - release_ai_calls.calls, least(d.calls, billed))
   where d.user_id = target_user_id and d.day = release_ai_calls.day and d.usage_type = release_ai_calls.usage_type
  returning d.calls into left_today;
  return left_today;
end
$$;
revoke execute on function private.release_ai_calls(uuid, text, date, integer) from public, anon, authenticated;
grant execute on function private.release_ai_calls(uuid, text, date, integer) to service_role;

create or replace function public.release_ai_calls(user_id uuid, usage_type text, day date, calls integer default 1)
returns integer
language sql
set search_path = ''
as $$ select private.release_ai_calls($1, $2, $3, $4) $$;
comment on function public.release_ai_calls(uuid, text, date, integer) is
  'Service role (the api) only: gives back calls claimed on `day` that the provider did not bill (never below the calls ai_usage recorded that day); returns the calls still counted that day.';
revoke execute on function public.release_ai_calls(uuid, text, date, integer) from public, anon, authenticated;
grant execute on function public.release_ai_calls(uuid, text, date, integer) to service_role;

-- Supersedes begin_entry_tone_analysis(uuid, text) of 20261122010000_ai_usage.sql: the same
-- rule, with the cap the api applies (daily_cap, as in claim_ai_calls).
drop function public.begin_entry_tone_analysis(uuid, text);
drop function private.begin_entry_tone_analysis(uuid, text);

create or replace function private.begin_entry_tone_analysis(entry_id uuid, content_sha256 text, daily_cap integer)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  caller uuid := (select auth.uid());
  worth_it boolean;
  stored_title text;
begin
  select (e.mood is null or e.mood_detected)
         and private.sha256_hex(c.content) is distinct from lower(content_sha256),
         e.title
    into worth_it, stored_title
    from public.journal_entries e
    left join public.journal_entry_contents c on c.entry_id = e.id
   where e.id = begin_entry_tone_analysis.entry_id and e.user_id = caller;
  if not coalesce(worth_it, false)
     or (private.claim_ai_calls(caller, 'tone_analysis', 1, daily_cap) ->> 'granted')::integer = 0 then
    return jsonb_build_object('analyze', false, 'title', null);
  end if;
  return jsonb_build_object('analyze', true, 'title', stored_title);
end
$$;
grant execute on function private.begin_entry_tone_analysis(uuid, text, integer) to authenticated;

create or replace function public.begin_entry_tone_analysis(entry_id uuid, content_sha256 text, daily_cap integer default null)
returns jsonb
language sql
set search_path = ''
as $$ select private.begin_entry_tone_analysis($1, $2, $3) $$;
comment on function public.begin_entry_tone_analysis(uuid, text, integer) is
  'PUT /api/journal/:id: whether new content (its SHA-256 hex) should be analysed ({analyze, title}); counts the call against the daily cap (daily_cap: the api''s, 0 none) when it should.';
grant execute on function public.begin_entry_tone_analysis(uuid, text, integer) to authenticated;

-- ---------------------------------------------------------------------------------------
-- What each buyer holds: the pack's images as of the purchase, plus tones added later.

create table public.tone_pack_purchase_images (
  purchase_id uuid not null references public.tone_pack_purchases (id) on delete cascade,
  tone text not null,
  object_name text not null check (char_length(object_name) <= 512),
  url text not null check (char_length(url) <= 2048 and url ~ '^https?://'),
  updated_at timestamptz not null,
  primary key (purchase_id, tone)
);
comment on table public.tone_pack_purchase_images is
  'The images a buyer holds, one per tone: the pack''s images when they bought it, and tones first added after. An owner''s later replacement never changes them. Written only by purchase_tone_pack and set_tone_pack_image.';
comment on column public.tone_pack_purchase_images.updated_at is 'When the owner made this image (the pack image''s updated_at when the buyer got it).';
create index tone_pack_purchase_images_by_object on public.tone_pack_purchase_images (object_name);

alter table public.tone_pack_purchase_images enable row level security;
revoke all on public.tone_pack_purchase_images from anon, authenticated, service_role;
grant select on public.tone_pack_purchase_images to authenticated, service_role;
create policy "tone_pack_purchase_images: readable with their purchase" on public.tone_pack_purchase_images
  for select to authenticated
  using (purchase_id in (select b.id from public.tone_pack_purchases b));
comment on policy "tone_pack_purchase_images: readable with their purchase" on public.tone_pack_purchase_images is
  'The subquery runs under tone_pack_purchases'' own policy: the buyer and super admins.';

-- Purchases made before this migration hold the images the pack has now.
insert into public.tone_pack_purchase_images (purchase_id, tone, object_name, url, updated_at)
select b.id, i.tone, i.object_name, i.url, i.updated_at
  from public.tone_pack_purchases b
  join public.tone_pack_images i on i.pack_id = b.pack_id
on conflict do nothing;

-- Supersedes private.tone_pack_json of 20261122020000_tone_packs.sql: a buyer sees the images
-- they hold; everyone else the pack's current images.
create or replace function private.tone_pack_json(pack public.tone_packs, viewer uuid) returns jsonb
language sql stable security definer
set search_path = ''
as $$
  select jsonb_build_object(
    'id', pack.id, 'owner_id', pack.owner_id, 'name', pack.name, 'description', pack.description,
    'theme', pack.theme, 'is_public', pack.is_public, 'price_drops', pack.price_drops,
    'retired', pack.retired_at is not null, 'created_at', pack.created_at, 'updated_at', pack.updated_at,
    'images', case
      when r.purchase_id is null then
        coalesce((select jsonb_agg(jsonb_build_object('tone', i.tone, 'url', i.url, 'updated_at', i.updated_at) order by i.tone)
                    from public.tone_pack_images i where i.pack_id = pack.id), '[]'::jsonb)
      else
        coalesce((select jsonb_agg(jsonb_build_object('tone', k.tone, 'url', k.url, 'updated_at', k.updated_at) order by k.tone)
                    from public.tone_pack_purchase_images k where k.purchase_id = r.purchase_id), '[]'::jsonb)
      end,
    'is_owner', pack.owner_id = viewer,
    'is_shared', r.shared,
    'is_purchased', r.purchase_id is not null,
    'can_use', (pack.retired_at is null and (pack.owner_id = viewer or (pack.is_public and pack.price_drops = 0) or r.shared))
               or r.purchase_id is not null,
    'can_buy', pack.retired_at is null and pack.owner_id <> viewer and r.purchase_id is null and (pack.is_public or r.shared),
    'is_active', coalesce((select a.preferences ->> 'active_tone_pack_id' = pack.id::text
                             from public.profiles a where a.id = viewer), false))
  from (select exists (select 1 from public.tone_pack_shares s where s.pack_id = pack.id and s.user_id = viewer) as shared,
               (select b.id from public.tone_pack_purchases b where b.pack_id = pack.id and b.user_id = viewer) as purchase_id) r
$$;

-- Supersedes private.viewer_tone_icons of 20261122080000_feed_page_decorations.sql (the one
-- rule behind tone_icon_url, the entry view and the feed): a buyer's icons are the ones they
-- hold; otherwise the pack's current ones while the viewer may use it.
create or replace function private.viewer_tone_icons() returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me constant uuid := (select auth.uid());
  active uuid;
  purchase uuid;
begin
  select (p.preferences ->> 'active_tone_pack_id')::uuid into active from public.profiles p where p.id = me;
  if active is null then
    return null;
  end if;
  select b.id into purchase from public.tone_pack_purchases b where b.pack_id = active and b.user_id = me;
  if purchase is not null then
    return (select jsonb_object_agg(k.tone, k.url) from public.tone_pack_purchase_images k where k.purchase_id = purchase);
  end if;
  return (
    select jsonb_object_agg(i.tone, i.url)
      from public.tone_packs p
      join public.tone_pack_images i on i.pack_id = p.id
     where p.id = active
       and p.retired_at is null
       and (p.owner_id = me or (p.is_public and p.price_drops = 0)
            or exists (select 1 from public.tone_pack_shares s where s.pack_id = p.id and s.user_id = me)));
end
$$;

-- Supersedes private.set_tone_pack_image of 20261122020000_tone_packs.sql. Same checks; in
-- addition a tone the pack did not have reaches every buyer, and the replaced object is
-- returned for deletion only when no buyer holds it. The pack row is locked, so a purchase
-- (which key-shares it) records the images either before or after, never halfway.
create or replace function private.set_tone_pack_image(owner_id uuid, pack_id uuid, tone text, object_name text, url text)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  previous text;
  image public.tone_pack_images;
begin
  perform 1 from public.tone_packs p
   where p.id = set_tone_pack_image.pack_id and p.owner_id = set_tone_pack_image.owner_id and p.retired_at is null
     for update;
  if not found then
    raise exception 'tone pack not found' using errcode = 'PT404';
  end if;
  if tone is null or tone not in ('joyful', 'grateful', 'excited', 'hopeful', 'content', 'peaceful', 'optimistic',
                                  'sad', 'anxious', 'frustrated', 'angry', 'worried', 'disappointed', 'melancholic',
                                  'pessimistic', 'calm', 'contemplative', 'neutral', 'tired', 'energetic') then
    raise exception 'tone: must be one of the 20 detectable tones' using errcode = '22023';
  end if;
  if object_name is null or char_length(object_name) > 512
     or object_name not like owner_id::text || '/' || pack_id::text || '/' || tone || '-%'
     or object_name ~ '(^|/)\.\.?(/|$)'
     or not exists (select 1 from storage.objects o where o.bucket_id = 'tone-packs' and o.name = object_name) then
    raise exception 'object_name: must name a stored object in the owner''s folder for this pack and tone' using errcode = '22023';
  end if;
  if url is null or url !~ '^https?://' or char_length(url) > 2048
     or right(url, char_length(object_name) + 1) <> '/' || object_name then
    raise exception 'url: must be the public address of object_name' using errcode = '22023';
  end if;
  select i.object_name into previous from public.tone_pack_images i
   where i.pack_id = set_tone_pack_image.pack_id and i.tone = set_tone_pack_image.tone;
  insert into public.tone_pack_images as i (pack_id, tone, object_name, url)
  values (set_tone_pack_image.pack_id, set_tone_pack_image.tone, object_name, url)
  on conflict on constraint tone_pack_images_pkey
  do update set object_name = excluded.object_name, url = excluded.url, updated_at = now()
  returning * into image;
  if previous is null then
    insert into public.tone_pack_purchase_images (purchase_id, tone, object_name, url, updated_at)
    select b.id, image.tone, image.object_name, image.url, image.updated_at
      from public.tone_pack_purchases b where b.pack_id = set_tone_pack_image.pack_id
    on conflict do nothing;
  end if;
  update public.tone_packs p set updated_at = now() where p.id = set_tone_pack_image.pack_id;
  if previous = object_name
     or exists (select 1 from public.tone_pack_purchase_images k where k.object_name = previous) then
    previous := null;
  end if;
  return jsonb_build_object('previous_object', previous, 'tone', image.tone, 'url', image.url,
                            'updated_at', image.updated_at);
end
$$;

-- Supersedes private.delete_tone_pack of 20261122020000_tone_packs.sql: a pack nobody bought
-- goes with every object in its folder (earlier images left by a failed request included).
create or replace function private.delete_tone_pack(pack_id uuid) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  pack public.tone_packs := private.owned_tone_pack(pack_id, true);
  objects text[];
begin
  if exists (select 1 from public.tone_pack_purchases b where b.pack_id = pack.id) then
    update public.tone_packs p set retired_at = now(), is_public = false where p.id = pack.id;
    delete from public.tone_pack_shares s where s.pack_id = pack.id;
    return jsonb_build_object('result', 'retired', 'objects', '[]'::jsonb);
  end if;
  select coalesce(array_agg(o.name order by o.name), '{}') into objects
    from storage.objects o
   where o.bucket_id = 'tone-packs' and o.name like pack.owner_id::text || '/' || pack.id::text || '/%';
  delete from public.tone_packs p where p.id = pack.id;
  return jsonb_build_object('result', 'deleted', 'objects', to_jsonb(objects));
end
$$;

-- The bucket: the api (service role) writes it, after checking each image's bytes; clients
-- only read. Supersedes the insert, update and delete policies of 20261122020000_tone_packs.sql.
drop policy "tone-packs bucket: users upload into their own folder" on storage.objects;
drop policy "tone-packs bucket: users replace files in their own folder" on storage.objects;
drop policy "tone-packs bucket: users delete their own files that no pack shows" on storage.objects;
drop function private.is_tone_pack_image(text);

-- ---------------------------------------------------------------------------------------
-- The price the buyer saw.

alter table public.tone_packs add column price_changed_at timestamptz;
comment on column public.tone_packs.price_changed_at is
  'When price_drops last changed (null: never since creation; kept by a trigger, clients cannot set it). Once set, a purchase must name the price it expects.';

-- Packs made before this migration: their price history is unknown. One edited after its
-- creation may have changed price, so it is treated as changed (a buyer then confirms the
-- price once); the stamp trigger would restamp updated_at, so it is off for this update.
alter table public.tone_packs disable trigger tone_packs_stamp;
update public.tone_packs p set price_changed_at = p.updated_at where p.updated_at > p.created_at;
alter table public.tone_packs enable trigger tone_packs_stamp;

-- Supersedes private.stamp_tone_pack of 20261122020000_tone_packs.sql: also stamps price changes.
create or replace function private.stamp_tone_pack() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.name := btrim(new.name);
  if tg_op = 'UPDATE' then
    new.updated_at := now();
    new.price_changed_at := case when new.price_drops is distinct from old.price_drops then now() else old.price_changed_at end;
  else
    new.created_at := now();
    new.updated_at := new.created_at;
    new.price_changed_at := null;
  end if;
  return new;
end
$$;

-- Supersedes purchase_tone_pack(uuid, text) of 20261122020000_tone_packs.sql. The same
-- transaction, plus: the price the buyer expects (409 when it is not the price), no purchase
-- naming no price once the price has changed, and the images the buyer now holds.
drop function public.purchase_tone_pack(uuid, text);
drop function private.purchase_tone_pack(uuid, text);

create or replace function private.purchase_tone_pack(pack_id uuid, idempotency_key text, expected_price_drops integer)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  balance integer;
  pack public.tone_packs;
  earlier public.tone_pack_purchases;
  bought public.tone_pack_purchases;
  ledger_id bigint;
begin
  if me is null then
    raise exception 'a signed-in user is required' using errcode = '42501';
  end if;
  if idempotency_key is not null and char_length(idempotency_key) not between 1 and 200 then
    raise exception 'Idempotency-Key: must be 1 to 200 characters' using errcode = '22023';
  end if;
  if expected_price_drops is not null and expected_price_drops not between 0 and 1000000 then
    raise exception 'expected_price_drops: must be an integer from 0 to 1000000' using errcode = '22023';
  end if;
  select p.drops_balance into balance from public.profiles p where p.id = me for update;
  if not found then
    raise exception 'profile not found' using errcode = 'PT404';
  end if;

  -- A retry of a purchase that went through answers with that purchase, charging nothing.
  if idempotency_key is not null then
    select * into earlier from public.tone_pack_purchases b
     where b.user_id = me and b.idempotency_key = purchase_tone_pack.idempotency_key;
    if found then
      if earlier.pack_id is distinct from purchase_tone_pack.pack_id then
        raise exception 'Idempotency-Key: already used for another purchase' using errcode = 'PT422';
      end if;
      return jsonb_build_object('purchase', to_jsonb(earlier), 'balance', balance, 'replayed', true);
    end if;
  end if;

  -- Key share: the owner may still edit the pack meanwhile, but not delete it or change its
  -- images; the price read here is the price charged.
  select * into pack from public.tone_packs p where p.id = purchase_tone_pack.pack_id for key share;
  if not found or not private.can_see_tone_pack(pack, me) then
    raise exception 'tone pack not found' using errcode = 'PT404';
  end if;
  if pack.owner_id = me then
    raise exception 'you own this pack' using errcode = 'PT409';
  end if;
  if exists (select 1 from public.tone_pack_purchases b where b.pack_id = pack.id and b.user_id = me) then
    raise exception 'you already bought this pack' using errcode = 'PT409';
  end if;
  if pack.retired_at is not null
     or not (pack.is_public or exists (select 1 from public.tone_pack_shares s where s.pack_id = pack.id and s.user_id = me)) then
    raise exception 'this pack is not for sale to you' using errcode = 'PT404';
  end if;
  if expected_price_drops is not null and expected_price_drops <> pack.price_drops then
    raise exception 'the price changed: it is now % drops, not %; buy again with the new price', pack.price_drops,
      expected_price_drops using errcode = 'PT409';
  end if;
  -- Without a named price, the only price a buyer can have seen is the one the pack was
  -- created with: once it has changed (however long ago), they must confirm the current one.
  if expected_price_drops is null and pack.price_changed_at is not null then
    raise exception 'the price of this pack changed: it is now % drops; confirm it by sending expected_price_drops', pack.price_drops
      using errcode = 'PT409';
  end if;
  if balance < pack.price_drops then
    raise exception 'insufficient drops: balance %, price %', balance, pack.price_drops using errcode = 'PT402';
  end if;

  if pack.price_drops > 0 then
    insert into public.drops_transactions (user_id, amount, type, description, item_id, item_type)
    values (me, -pack.price_drops, 'purchase', 'Tone pack: ' || left(pack.name, 400), pack.id, 'tone_pack')
    returning id into ledger_id;
  end if;
  insert into public.tone_pack_purchases (pack_id, user_id, pack_name, price_drops, transaction_id, idempotency_key)
  values (pack.id, me, pack.name, pack.price_drops, ledger_id, purchase_tone_pack.idempotency_key)
  returning * into bought;
  insert into public.tone_pack_purchase_images (purchase_id, tone, object_name, url, updated_at)
  select bought.id, i.tone, i.object_name, i.url, i.updated_at from public.tone_pack_images i where i.pack_id = pack.id;
  return jsonb_build_object('purchase', to_jsonb(bought), 'balance', balance - pack.price_drops, 'replayed', false);
end
$$;
grant execute on function private.purchase_tone_pack(uuid, text, integer) to authenticated;

create or replace function public.purchase_tone_pack(
  pack_id uuid, idempotency_key text default null, expected_price_drops integer default null
) returns jsonb
language sql
set search_path = ''
as $$ select private.purchase_tone_pack($1, $2, $3) $$;
comment on function public.purchase_tone_pack(uuid, text, integer) is
  'Buys a pack (public, or shared with the caller; not their own; once): a purchase ledger row of -price_drops and the purchase, in one transaction; the buyer keeps the images as they are now. {purchase, balance, replayed}. 402 insufficient drops; 409 own, already bought, or the price is not expected_price_drops (without it: the price ever changed since the pack was created); the same idempotency_key returns the first purchase.';
grant execute on function public.purchase_tone_pack(uuid, text, integer) to authenticated;

notify pgrst, 'reload schema';
