-- =============================================================================================
-- Tone packs
-- =============================================================================================
-- Tone packs (SPEC "Tone pack", "Drops currency" rule 3): themed sets of images, one
-- per tone, that clients show as small icons on entries whose mood matches. Packs are owned,
-- shared with users, made public, activated (profiles.preferences.active_tone_pack_id) and
-- bought with drops through the ledger.
--
-- Who may do what (every rule is a policy or a function here, so PostgREST clients and
-- /api/tone-packs get the same answers):
--   see a pack      its owner; users it is shared with; its buyers; everyone signed in when
--                   it is public; super admins (support). Anonymous callers: nothing.
--   use a pack      (activate it; its icons on entries) its owner, its sharees, its buyers,
--                   and everyone signed in when it is public and free.
--   buy a pack      a user it is public for or shared with, not its owner, not already bought.
--   change a pack   its owner (name, description, theme, is_public, price_drops; images).
--   delete a pack   its owner. A pack nobody bought is removed with its images and shares; a
--                   pack someone bought is RETIRED instead: gone for its owner, the public
--                   and its sharees, but kept (with its images) for its buyers, whose purchase
--                   and ledger rows are their history. An owner can unpublish a pack, never
--                   take it back from a buyer.

-- ---------------------------------------------------------------------------------------------
-- Packs, their images, shares and purchases
-- ---------------------------------------------------------------------------------------------

create table public.tone_packs (
  id uuid primary key default gen_random_uuid(),
  owner_id uuid not null default auth.uid() references public.profiles (id) on delete cascade,
  name text not null check (char_length(btrim(name)) between 1 and 100),
  description text not null default '' check (char_length(description) <= 1000),
  theme text not null check (theme in ('origami', 'animals', 'nature', 'abstract', 'geometric', 'minimalist',
                                       'watercolor', 'line-art', 'icons', 'emojis', 'shapes', 'patterns')),
  is_public boolean not null default false,
  price_drops integer not null default 0 check (price_drops between 0 and 1000000),
  retired_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  price_changed_at timestamptz,
  constraint tone_packs_retired_not_public check (retired_at is null or not is_public)
);
alter table public.tone_packs enable row level security;
comment on table public.tone_packs is
  'Themed icon packs: one image per tone (tone_pack_images). Visible to the owner, sharees, buyers, everyone signed in when public, super admins.';
comment on column public.tone_packs.price_drops is 'Price in drops (0: free). Buying spends it through the drops ledger.';
comment on column public.tone_packs.retired_at is
  'Set when the owner deleted a pack someone had bought: kept for its buyers only.';
comment on column public.tone_packs.price_changed_at is
  'When price_drops last changed (null: never since creation; kept by a trigger, clients cannot set it). Once set, a purchase must name the price it expects.';
revoke all on public.tone_packs from anon, authenticated, service_role;
grant select on public.tone_packs to authenticated, service_role;
grant insert (owner_id, name, description, theme, is_public, price_drops), update (name, description, theme, is_public, price_drops)
  on public.tone_packs to authenticated;

create index tone_packs_by_owner on public.tone_packs (owner_id, created_at desc, id desc);

create index tone_packs_public_newest on public.tone_packs (created_at desc, id desc)
  where is_public and retired_at is null;

create table public.tone_pack_images (
  pack_id uuid not null references public.tone_packs (id) on delete cascade,
  tone text not null check (tone in ('joyful', 'grateful', 'excited', 'hopeful', 'content', 'peaceful', 'optimistic',
                                     'sad', 'anxious', 'frustrated', 'angry', 'worried', 'disappointed', 'melancholic',
                                     'pessimistic', 'calm', 'contemplative', 'neutral', 'tired', 'energetic')),
  object_name text not null unique check (char_length(object_name) <= 512),
  url text not null check (char_length(url) <= 2048 and url ~ '^https?://'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (pack_id, tone)
);
alter table public.tone_pack_images enable row level security;
comment on table public.tone_pack_images is
  'The image of a pack for one tone: its object in the public bucket tone-packs and its public URL. Written only by set_tone_pack_image.';
revoke all on public.tone_pack_images from anon, authenticated, service_role;
grant select on public.tone_pack_images to authenticated, service_role;

create table public.tone_pack_shares (
  pack_id uuid not null references public.tone_packs (id) on delete cascade,
  user_id uuid not null references public.profiles (id) on delete cascade,
  created_at timestamptz not null default now(),
  primary key (pack_id, user_id)
);
alter table public.tone_pack_shares enable row level security;
comment on table public.tone_pack_shares is 'Users a pack''s owner shared it with (they may use it). Written by share/unshare_tone_pack.';
revoke all on public.tone_pack_shares from anon, authenticated, service_role;
grant select on public.tone_pack_shares to authenticated, service_role;

create index tone_pack_shares_by_user on public.tone_pack_shares (user_id, pack_id);

create table public.tone_pack_purchases (
  id uuid primary key default gen_random_uuid(),
  pack_id uuid references public.tone_packs (id) on delete set null,
  user_id uuid not null references public.profiles (id) on delete cascade,
  pack_name text not null,
  price_drops integer not null check (price_drops >= 0),
  transaction_id bigint unique,
  idempotency_key text check (char_length(idempotency_key) between 1 and 200),
  created_at timestamptz not null default now(),
  constraint tone_pack_purchases_once unique (pack_id, user_id),
  constraint tone_pack_purchases_paid_through_ledger check ((price_drops = 0) = (transaction_id is null))
);
alter table public.tone_pack_purchases enable row level security;
comment on table public.tone_pack_purchases is
  'Who bought which pack, for what, and the ledger row that charged it (none for a free pack). Kept when the pack is deleted: the buyer''s history.';
comment on column public.tone_pack_purchases.pack_id is 'Null only if the pack was removed with its owner''s account.';
comment on column public.tone_pack_purchases.transaction_id is
  'The drops_transactions row that charged it (no foreign key: the append-only ledger stays truncate-proof on its own terms).';
comment on column public.tone_pack_purchases.idempotency_key is 'The Idempotency-Key of the request that made it: a retry returns this purchase.';
revoke all on public.tone_pack_purchases from anon, authenticated, service_role;
grant select on public.tone_pack_purchases to authenticated, service_role;

create index tone_pack_purchases_by_user on public.tone_pack_purchases (user_id, created_at desc, id desc);

create unique index tone_pack_purchases_one_per_key on public.tone_pack_purchases (user_id, idempotency_key)
  where idempotency_key is not null;

-- ---------------------------------------------------------------------------------------------
-- Who relates to a pack
-- ---------------------------------------------------------------------------------------------

-- Who relates to a pack (definer helpers: the sets policies match against, computed once per
-- statement; and the single-pack checks the functions below use).
create or replace function private.my_shared_tone_pack_ids() returns setof uuid
language sql stable security definer
set search_path = ''
as $$ select s.pack_id from public.tone_pack_shares s where s.user_id = (select auth.uid()) $$;
grant execute on function private.my_shared_tone_pack_ids() to authenticated;

-- The packs the caller bought.
create or replace function private.my_purchased_tone_pack_ids() returns setof uuid
language sql stable security definer
set search_path = ''
as $$ select b.pack_id from public.tone_pack_purchases b where b.user_id = (select auth.uid()) and b.pack_id is not null $$;
grant execute on function private.my_purchased_tone_pack_ids() to authenticated;

-- The packs the caller owns.
create or replace function private.my_tone_pack_ids() returns setof uuid
language sql stable security definer
set search_path = ''
as $$ select p.id from public.tone_packs p where p.owner_id = (select auth.uid()) and p.retired_at is null $$;
grant execute on function private.my_tone_pack_ids() to authenticated;

-- May this user see the pack (read it, its images)? The policies' rule, for one pack.
create or replace function private.can_see_tone_pack(pack public.tone_packs, viewer uuid) returns boolean
language sql stable security definer
set search_path = ''
as $$
  select (pack.retired_at is null and (pack.owner_id = viewer or pack.is_public
            or exists (select 1 from public.tone_pack_shares s where s.pack_id = pack.id and s.user_id = viewer)))
      or exists (select 1 from public.tone_pack_purchases b where b.pack_id = pack.id and b.user_id = viewer)
      or exists (select 1 from public.profiles a where a.id = viewer and a.role = 'super_admin')
$$;

-- May this user use the pack (activate it, see its icons on entries)?
create or replace function private.can_use_tone_pack(pack_id uuid, viewer uuid) returns boolean
language sql stable security definer
set search_path = ''
as $$
  select exists (
    select 1 from public.tone_packs p
     where p.id = $1
       and ((p.retired_at is null and (p.owner_id = $2 or (p.is_public and p.price_drops = 0)
              or exists (select 1 from public.tone_pack_shares s where s.pack_id = p.id and s.user_id = $2)))
            or exists (select 1 from public.tone_pack_purchases b where b.pack_id = p.id and b.user_id = $2)))
$$;

create policy "tone_packs: owners, sharees, buyers, the public and super admins read" on public.tone_packs
  for select to authenticated
  using ((retired_at is null and (owner_id = (select auth.uid()) or is_public
            or id in (select private.my_shared_tone_pack_ids())))
         or id in (select private.my_purchased_tone_pack_ids())
         or (select private.is_super_admin()));

create policy "tone_packs: users create their own" on public.tone_packs
  for insert to authenticated
  with check (owner_id = (select auth.uid()));

create policy "tone_packs: owners update" on public.tone_packs
  for update to authenticated
  using (owner_id = (select auth.uid()) and retired_at is null)
  with check (owner_id = (select auth.uid()) and retired_at is null);

create policy "tone_pack_images: readable with their pack" on public.tone_pack_images
  for select to authenticated
  using (exists (select 1 from public.tone_packs p where p.id = pack_id));
comment on policy "tone_pack_images: readable with their pack" on public.tone_pack_images is
  'The subquery runs under tone_packs'' own policy: an image is visible exactly when its pack is.';

create policy "tone_pack_shares: the pack's owner, the sharee and super admins read" on public.tone_pack_shares
  for select to authenticated
  using (user_id = (select auth.uid()) or pack_id in (select private.my_tone_pack_ids())
         or (select private.is_super_admin()));

create policy "tone_pack_purchases: buyers and super admins read" on public.tone_pack_purchases
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- Keeps updated_at and price_changed_at; clients cannot set either.
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

create trigger tone_packs_stamp before insert or update on public.tone_packs
  for each row execute function private.stamp_tone_pack();

-- The columns' rules in words, as /api says them (conventions.sql, "Field rules in words").
-- Runs before tone_packs_stamp (which trims the name).
create or replace function private.check_tone_pack_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_required('owner_id', new.owner_id);
  perform private.check_required('name', new.name);
  perform private.check_length('name', btrim(new.name), 100);
  perform private.check_required('description', new.description);
  perform private.check_max_length('description', new.description, 1000);
  perform private.check_required('theme', new.theme);
  perform private.check_one_of('theme', new.theme, array['origami', 'animals', 'nature', 'abstract', 'geometric',
    'minimalist', 'watercolor', 'line-art', 'icons', 'emojis', 'shapes', 'patterns']);
  perform private.check_required('is_public', new.is_public);
  if new.is_public and new.retired_at is not null then
    raise exception 'is_public: a retired pack cannot be public' using errcode = '23514';
  end if;
  perform private.check_required('price_drops', new.price_drops);
  perform private.check_between('price_drops', new.price_drops, 0, 1000000);
  return new;
end
$$;
create trigger tone_packs_check_fields
  before insert or update of owner_id, name, description, theme, is_public, price_drops on public.tone_packs
  for each row execute function private.check_tone_pack_fields();

-- A pack as the api shows it to `viewer`: a buyer sees the images they hold; everyone else the
-- pack's current images.
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

/*
 * GET /api/tone-packs: a page of the packs the caller owns, was shared, bought, or that are
 * public, newest first by (created_at, id), each once. Four branches, each limited to the
 * page size from its own index, then merged.
 */
create or replace function private.list_tone_packs(before_created_at timestamptz, before_id uuid, page_size integer)
returns table (id uuid, created_at timestamptz, pack jsonb)
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  cursor_at timestamptz := coalesce(before_created_at, 'infinity'::timestamptz);
  cursor_id uuid := coalesce(before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid);
begin
  if me is null then
    raise exception 'a signed-in user is required' using errcode = '42501';
  end if;
  if page_size is null or page_size not between 1 and 101 then
    raise exception 'page_size: must be between 1 and 101' using errcode = '22023';
  end if;
  return query
    select p.id, p.created_at, private.tone_pack_json(p, me)
      from (select distinct c.id from (
              (select k.id, k.created_at from public.tone_packs k
                where k.owner_id = me and k.retired_at is null and (k.created_at, k.id) < (cursor_at, cursor_id)
                order by k.created_at desc, k.id desc limit page_size)
              union all
              (select k.id, k.created_at from public.tone_packs k
                where k.is_public and k.retired_at is null and (k.created_at, k.id) < (cursor_at, cursor_id)
                order by k.created_at desc, k.id desc limit page_size)
              union all
              (select k.id, k.created_at from public.tone_pack_shares s join public.tone_packs k on k.id = s.pack_id
                where s.user_id = me and k.retired_at is null and (k.created_at, k.id) < (cursor_at, cursor_id)
                order by k.created_at desc, k.id desc limit page_size)
              union all
              (select k.id, k.created_at from public.tone_pack_purchases b join public.tone_packs k on k.id = b.pack_id
                where b.user_id = me and (k.created_at, k.id) < (cursor_at, cursor_id)
                order by k.created_at desc, k.id desc limit page_size)) c) ids
      join public.tone_packs p on p.id = ids.id
     order by p.created_at desc, p.id desc
     limit page_size;
end
$$;
grant execute on function private.list_tone_packs(timestamp with time zone,uuid,integer) to authenticated;

create or replace function public.list_tone_packs(
  before_created_at timestamptz default null, before_id uuid default null, page_size integer default 50
) returns table (id uuid, created_at timestamptz, pack jsonb)
language sql stable
set search_path = ''
as $$ select * from private.list_tone_packs($1, $2, $3) $$;
comment on function public.list_tone_packs(timestamptz, uuid, integer) is
  'Packs the caller owns, was shared, bought, or that are public, newest first (keyset by created_at, id), each with its images and the caller''s relation to it.';
grant execute on function list_tone_packs(timestamp with time zone,uuid,integer) to authenticated, service_role;

-- The purchased section: the caller's purchases, newest first, each with its pack.
create or replace function private.list_tone_pack_purchases(before_created_at timestamptz, before_id uuid, page_size integer)
returns table (id uuid, created_at timestamptz, purchase jsonb)
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
begin
  if me is null then
    raise exception 'a signed-in user is required' using errcode = '42501';
  end if;
  if page_size is null or page_size not between 1 and 101 then
    raise exception 'page_size: must be between 1 and 101' using errcode = '22023';
  end if;
  return query
    select b.id, b.created_at,
           jsonb_build_object('id', b.id, 'pack_id', b.pack_id, 'pack_name', b.pack_name, 'price_drops', b.price_drops,
                              'transaction_id', b.transaction_id, 'created_at', b.created_at,
                              'pack', (select private.tone_pack_json(p, me) from public.tone_packs p where p.id = b.pack_id))
      from public.tone_pack_purchases b
     where b.user_id = me
       and (b.created_at, b.id) < (coalesce(before_created_at, 'infinity'::timestamptz),
                                   coalesce(before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid))
     order by b.created_at desc, b.id desc
     limit page_size;
end
$$;
grant execute on function private.list_tone_pack_purchases(timestamp with time zone,uuid,integer) to authenticated;

create or replace function public.list_tone_pack_purchases(
  before_created_at timestamptz default null, before_id uuid default null, page_size integer default 50
) returns table (id uuid, created_at timestamptz, purchase jsonb)
language sql stable
set search_path = ''
as $$ select * from private.list_tone_pack_purchases($1, $2, $3) $$;
comment on function public.list_tone_pack_purchases(timestamptz, uuid, integer) is
  'The caller''s tone pack purchases, newest first (keyset by created_at, id), each with its pack (null if it no longer exists).';
grant execute on function list_tone_pack_purchases(timestamp with time zone,uuid,integer) to authenticated, service_role;

-- The pack for GET /api/tone-packs/:id; not found unless the caller may see it.
create or replace function private.get_tone_pack(pack_id uuid) returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  pack public.tone_packs;
begin
  select * into pack from public.tone_packs p where p.id = get_tone_pack.pack_id;
  if not found or me is null or not private.can_see_tone_pack(pack, me) then
    raise exception 'tone pack not found' using errcode = 'PT404';
  end if;
  return private.tone_pack_json(pack, me);
end
$$;
grant execute on function private.get_tone_pack(uuid) to authenticated;

create or replace function public.get_tone_pack(pack_id uuid) returns jsonb
language sql stable
set search_path = ''
as $$ select private.get_tone_pack($1) $$;
comment on function public.get_tone_pack(uuid) is
  'A pack with its images and the caller''s relation to it (is_owner, is_shared, is_purchased, can_use, can_buy, is_active); 404 unless the caller may see it.';
grant execute on function get_tone_pack(uuid) to authenticated, service_role;

-- The pack the caller is about to change: theirs, else 403 when they may see it, else 404.
create or replace function private.owned_tone_pack(pack_id uuid, lock boolean) returns public.tone_packs
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  pack public.tone_packs;
begin
  if lock then
    select * into pack from public.tone_packs p where p.id = owned_tone_pack.pack_id for update;
  else
    select * into pack from public.tone_packs p where p.id = owned_tone_pack.pack_id;
  end if;
  if not found or me is null or not private.can_see_tone_pack(pack, me) then
    raise exception 'tone pack not found' using errcode = 'PT404';
  end if;
  if pack.owner_id <> me or pack.retired_at is not null then
    raise exception 'only the pack''s owner may change it' using errcode = '42501';
  end if;
  return pack;
end
$$;

-- Deletes a pack (owner): a pack nobody bought goes with every object in its folder (images
-- left by a failed request included); a pack someone bought is retired instead.
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
grant execute on function private.delete_tone_pack(uuid) to authenticated;

create or replace function public.delete_tone_pack(pack_id uuid) returns jsonb
language sql
set search_path = ''
as $$ select private.delete_tone_pack($1) $$;
comment on function public.delete_tone_pack(uuid) is
  'Owner only: removes a pack nobody bought (returns the storage objects to delete), or retires one someone bought (kept for its buyers).';
grant execute on function delete_tone_pack(uuid) to authenticated, service_role;

-- Users read their own folder of the bucket: the policy "own folder: users read theirs in avatars
-- and tone-packs" (avatars.sql), one select policy for both.

-- Sets the image of one tone (owner). A tone the pack did not have reaches every buyer, and the replaced object is
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
grant execute on function private.set_tone_pack_image(uuid,uuid,text,text,text) to service_role;

create or replace function public.set_tone_pack_image(owner_id uuid, pack_id uuid, tone text, object_name text, url text)
returns jsonb
language sql
set search_path = ''
as $$ select private.set_tone_pack_image($1, $2, $3, $4, $5) $$;
comment on function public.set_tone_pack_image(uuid, uuid, text, text, text) is
  'Service role (the api) only: makes a stored object (bucket tone-packs, {userId}/{packId}/{tone}-...) the owner''s pack image for a tone; returns {previous_object, tone, url, updated_at}.';
grant execute on function set_tone_pack_image(uuid,uuid,text,text,text) to service_role;

-- ---------------------------------------------------------------------------------------------
-- Sharing
-- ---------------------------------------------------------------------------------------------

-- Sharing (owner only). A user is named by id or by e-mail; an unknown one is "user not
-- found" either way, and only the pack's owner ever gets that far. A new sharee is notified
-- (tone_pack.shared).
create or replace function private.share_tone_pack(pack_id uuid, user_id uuid, email text) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  pack public.tone_packs := private.owned_tone_pack(pack_id, false);
  target uuid;
  share public.tone_pack_shares;
  created boolean := false;
begin
  if (share_tone_pack.user_id is null) = (nullif(btrim(share_tone_pack.email), '') is null) then
    raise exception 'user_id: give either user_id or email' using errcode = '22023';
  end if;
  if share_tone_pack.user_id is not null then
    select p.id into target from public.profiles p where p.id = share_tone_pack.user_id;
  else
    select u.id into target from auth.users u where lower(u.email) = lower(btrim(share_tone_pack.email)) limit 1;
  end if;
  if target is null then
    raise exception 'user not found' using errcode = 'PT404';
  end if;
  if target = pack.owner_id then
    raise exception '%: a pack cannot be shared with its owner',
      case when share_tone_pack.user_id is null then 'email' else 'user_id' end using errcode = '22023';
  end if;
  insert into public.tone_pack_shares as s (pack_id, user_id) values (pack.id, target)
  on conflict on constraint tone_pack_shares_pkey do nothing
  returning * into share;
  if found then
    created := true;
    perform private.notify(target, 'tone_pack.shared',
      jsonb_build_object('pack_id', pack.id, 'pack_name', pack.name, 'shared_by', pack.owner_id));
  else
    select * into share from public.tone_pack_shares s where s.pack_id = pack.id and s.user_id = target;
  end if;
  return jsonb_build_object('pack_id', share.pack_id, 'user_id', share.user_id, 'created_at', share.created_at,
                            'created', created);
end
$$;
grant execute on function private.share_tone_pack(uuid,uuid,text) to authenticated;

create or replace function public.share_tone_pack(pack_id uuid, user_id uuid default null, email text default null) returns jsonb
language sql
set search_path = ''
as $$ select private.share_tone_pack($1, $2, $3) $$;
comment on function public.share_tone_pack(uuid, uuid, text) is
  'Owner only: shares a pack with a user named by id or e-mail ({pack_id, user_id, created_at, created}); 404 for an unknown user.';
grant execute on function share_tone_pack(uuid,uuid,text) to authenticated, service_role;

-- Owner only: stops sharing a pack with a user (404 if it was not shared with them).
create or replace function private.unshare_tone_pack(pack_id uuid, user_id uuid) returns boolean
language plpgsql security definer
set search_path = ''
as $$
declare
  pack public.tone_packs := private.owned_tone_pack(pack_id, false);
begin
  delete from public.tone_pack_shares s where s.pack_id = pack.id and s.user_id = unshare_tone_pack.user_id;
  if not found then
    raise exception 'share not found' using errcode = 'PT404';
  end if;
  return true;
end
$$;
grant execute on function private.unshare_tone_pack(uuid,uuid) to authenticated;

create or replace function public.unshare_tone_pack(pack_id uuid, user_id uuid) returns boolean
language sql
set search_path = ''
as $$ select private.unshare_tone_pack($1, $2) $$;
comment on function public.unshare_tone_pack(uuid, uuid) is 'Owner only: stops sharing a pack with a user (404 if it was not shared with them).';
grant execute on function unshare_tone_pack(uuid,uuid) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Activation
-- ---------------------------------------------------------------------------------------------

-- Activation: preferences.active_tone_pack_id names a pack its user may use, by any path
-- (this function, PUT /api/user/profile, a PostgREST PATCH).
create or replace function private.check_active_tone_pack() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  -- Not a UUID at all: the profile's shape constraint answers that (400 naming the field).
  if new.preferences ->> 'active_tone_pack_id' !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
    return new;
  end if;
  if not private.can_use_tone_pack((new.preferences ->> 'active_tone_pack_id')::uuid, new.id) then
    raise exception 'preferences.active_tone_pack_id: not a tone pack this user may use' using errcode = '22023';
  end if;
  return new;
end
$$;

create trigger profiles_active_tone_pack_usable before update of preferences on public.profiles
  for each row
  when (new.preferences ->> 'active_tone_pack_id' is not null
        and new.preferences ->> 'active_tone_pack_id' is distinct from old.preferences ->> 'active_tone_pack_id')
  execute function private.check_active_tone_pack();

-- Sets the caller's active pack to one they may use (own, shared, bought, or public and free).
create or replace function private.activate_tone_pack(pack_id uuid) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  pack public.tone_packs;
  prefs jsonb;
begin
  select * into pack from public.tone_packs p where p.id = activate_tone_pack.pack_id;
  if not found or me is null or not private.can_see_tone_pack(pack, me) then
    raise exception 'tone pack not found' using errcode = 'PT404';
  end if;
  if not private.can_use_tone_pack(pack.id, me) then
    raise exception 'this pack must be bought before it can be activated' using errcode = '42501';
  end if;
  update public.profiles p set preferences = p.preferences || jsonb_build_object('active_tone_pack_id', pack.id)
   where p.id = me
  returning p.preferences into prefs;
  return jsonb_build_object('active_tone_pack_id', pack.id, 'preferences', prefs);
end
$$;
grant execute on function private.activate_tone_pack(uuid) to authenticated;

create or replace function public.activate_tone_pack(pack_id uuid) returns jsonb
language sql
set search_path = ''
as $$ select private.activate_tone_pack($1) $$;
comment on function public.activate_tone_pack(uuid) is
  'Sets the caller''s preferences.active_tone_pack_id to a pack they own, were shared, bought, or that is public and free ({active_tone_pack_id, preferences}).';
grant execute on function activate_tone_pack(uuid) to authenticated, service_role;

-- The caller's icon for a mood from their active pack (null: none).
create or replace function private.active_tone_icon_url(mood text) returns text
language plpgsql stable security definer
set search_path = ''
as $$
begin
  return private.viewer_tone_icons() ->> mood;
end
$$;
grant execute on function private.active_tone_icon_url(text) to authenticated;

-- Buys a pack for drops in one transaction: a purchase ledger row and the purchase with its
-- images; a replayed idempotency key returns the first purchase.
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
    raise exception 'insufficient drops: balance %, price %', balance, pack.price_drops
      using errcode = 'PT402', hint = 'insufficient_drops';
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
grant execute on function private.purchase_tone_pack(uuid,text,integer) to authenticated;

create or replace function public.purchase_tone_pack(
  pack_id uuid, idempotency_key text default null, expected_price_drops integer default null
) returns jsonb
language sql
set search_path = ''
as $$ select private.purchase_tone_pack($1, $2, $3) $$;
comment on function public.purchase_tone_pack(uuid, text, integer) is
  'Buys a pack (public, or shared with the caller; not their own; once): a purchase ledger row of -price_drops and the purchase, in one transaction; the buyer keeps the images as they are now. {purchase, balance, replayed}. 402 insufficient drops; 409 own, already bought, or the price is not expected_price_drops (without it: the price ever changed since the pack was created); the same idempotency_key returns the first purchase.';
grant execute on function purchase_tone_pack(uuid,text,integer) to authenticated, service_role;

-- The caller's tone icons (the one rule behind tone_icon_url, the entry view and the feed): a buyer's icons are the ones they
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
comment on function private.viewer_tone_icons() is
  'The signed-in viewer''s icons by mood ({tone: url}) from their active tone pack while they may use it; null otherwise.';
grant execute on function private.viewer_tone_icons() to authenticated;

-- ---------------------------------------------------------------------------------------------
-- What each buyer holds
-- ---------------------------------------------------------------------------------------------

-- What each buyer holds: the pack's images as of the purchase, plus tones added later.
create table public.tone_pack_purchase_images (
  purchase_id uuid not null references public.tone_pack_purchases (id) on delete cascade,
  tone text not null,
  object_name text not null check (char_length(object_name) <= 512),
  url text not null check (char_length(url) <= 2048 and url ~ '^https?://'),
  updated_at timestamptz not null,
  primary key (purchase_id, tone)
);
alter table public.tone_pack_purchase_images enable row level security;
comment on table public.tone_pack_purchase_images is
  'The images a buyer holds, one per tone: the pack''s images when they bought it, and tones first added after. An owner''s later replacement never changes them. Written only by purchase_tone_pack and set_tone_pack_image.';
comment on column public.tone_pack_purchase_images.updated_at is 'When the owner made this image (the pack image''s updated_at when the buyer got it).';
revoke all on public.tone_pack_purchase_images from anon, authenticated, service_role;
grant select on public.tone_pack_purchase_images to authenticated, service_role;

create index tone_pack_purchase_images_by_object on public.tone_pack_purchase_images (object_name);

create policy "tone_pack_purchase_images: readable with their purchase" on public.tone_pack_purchase_images
  for select to authenticated
  using (purchase_id in (select b.id from public.tone_pack_purchases b));
comment on policy "tone_pack_purchase_images: readable with their purchase" on public.tone_pack_purchase_images is
  'The subquery runs under tone_pack_purchases'' own policy: the buyer and super admins.';

