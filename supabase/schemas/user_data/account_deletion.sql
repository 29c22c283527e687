-- =============================================================================================
-- Account deletion: running the steps
-- =============================================================================================
-- The steps the api runs (routes/user_data/account_deletion.ts, service role: right after the
-- request, and the account-deletions job): claiming due deletions, recording each step, and what
-- the storage step reads and moves. The overview: user_data/account.sql.

-- A deletion has work due: a step left (after its backoff; the rows step goes first when the
-- auth user was deleted directly), or the final sweep a day after the rows step.
create or replace function private.account_deletion_due(d private.account_deletions) returns boolean
language sql stable
set search_path = ''
as $$
  select (d.next_attempt_at <= now()
          and (d.rows_done_at is null or d.stripe_done_at is null or d.music_done_at is null
               or d.storage_done_at is null))
      or d.rows_done_at < now() - interval '1 day'
$$;

-- Claims up to max_rows deletions with work left (a lease of 15 minutes: a crashed run's rows
-- come back), oldest first, skipping rows another run holds. With what the provider steps need.
create or replace function private.claim_account_deletions(max_rows integer, only_user uuid default null)
returns table (user_id uuid, requested_at timestamptz, stripe_customer_ids text[], stripe_subscription_ids text[],
               music_access_token text, music_refresh_token text,
               stripe_done boolean, music_done boolean, storage_done boolean, rows_done boolean,
               final_sweep_due boolean, remaining bigint)
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('run account deletions');
  return query
  with claimed as (
    update private.account_deletions d
       set claimed_until = now() + interval '15 minutes', attempts = d.attempts + 1
     where d.user_id in (
       select x.user_id from private.account_deletions x
        where (only_user is null or x.user_id = only_user)
          and (x.claimed_until is null or x.claimed_until < now())
          and private.account_deletion_due(x)
        order by x.requested_at
        limit greatest(coalesce(max_rows, 10), 1)
          for update skip locked)
    returning d.*
  )
  select c.user_id, c.requested_at, c.stripe_customer_ids, c.stripe_subscription_ids,
         -- The tokens are in the deletion row once the rows went first (the user's row is gone).
         private.music_decrypt(coalesce((select t.access_token from private.music_tokens t where t.user_id = c.user_id),
                                        c.music_access_token)),
         private.music_decrypt(coalesce((select t.refresh_token from private.music_tokens t where t.user_id = c.user_id),
                                        c.music_refresh_token)),
         c.stripe_done_at is not null, c.music_done_at is not null, c.storage_done_at is not null,
         c.rows_done_at is not null, coalesce(c.rows_done_at < now() - interval '1 day', false),
         (select count(*) from private.account_deletions r
           where (r.claimed_until is null or r.claimed_until < now())
             and private.account_deletion_due(r))
    from claimed c;
end
$$;
comment on function private.claim_account_deletions(integer, uuid) is
  'Service role: claims due account deletions (lease 15 minutes, skip locked) with the provider data the steps need; remaining = due rows left unclaimed.';
grant execute on function private.claim_account_deletions(integer, uuid) to service_role;

create or replace function public.claim_account_deletions(max_rows integer, only_user uuid default null)
returns table (user_id uuid, requested_at timestamptz, stripe_customer_ids text[], stripe_subscription_ids text[],
               music_access_token text, music_refresh_token text,
               stripe_done boolean, music_done boolean, storage_done boolean, rows_done boolean,
               final_sweep_due boolean, remaining bigint)
language sql security invoker
set search_path = ''
as $$ select * from private.claim_account_deletions(max_rows, only_user) $$;
grant execute on function public.claim_account_deletions(integer, uuid) to service_role;
revoke execute on function public.claim_account_deletions(integer, uuid) from public, anon, authenticated;

-- Records a provider or storage step as done ('stripe', 'music', 'storage', 'final_sweep'), or
-- a failure (error set): retried after a backoff that doubles per attempt, up to an hour.
create or replace function private.finish_account_deletion_step(user_id uuid, step text, error text default null)
returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('run account deletions');
  if step not in ('stripe', 'music', 'storage', 'rows', 'final_sweep', 'release') or (step = 'rows' and error is null) then
    raise exception 'step: stripe, music, storage, final_sweep or release (rows: failures only)' using errcode = '22023';
  end if;
  if error is not null then
    update private.account_deletions d
       set last_error = left(step || ': ' || error, 1000), claimed_until = null,
           next_attempt_at = now() + least(interval '1 hour', interval '30 seconds' * power(2, least(d.attempts, 7)))
     where d.user_id = finish_account_deletion_step.user_id;
    return;
  end if;
  if step = 'final_sweep' then
    delete from private.account_deletions d where d.user_id = finish_account_deletion_step.user_id
       and d.rows_done_at is not null and d.stripe_done_at is not null and d.music_done_at is not null
       and d.storage_done_at is not null;
    return;
  end if;
  update private.account_deletions d
     set stripe_done_at = case when step = 'stripe' then coalesce(d.stripe_done_at, now()) else d.stripe_done_at end,
         stripe_customer_ids = case when step = 'stripe' then '{}' else d.stripe_customer_ids end,
         stripe_subscription_ids = case when step = 'stripe' then '{}' else d.stripe_subscription_ids end,
         music_done_at = case when step = 'music' then coalesce(d.music_done_at, now()) else d.music_done_at end,
         music_access_token = case when step = 'music' then null else d.music_access_token end,
         music_refresh_token = case when step = 'music' then null else d.music_refresh_token end,
         storage_done_at = case when step = 'storage' then coalesce(d.storage_done_at, now()) else d.storage_done_at end,
         claimed_until = case when step = 'release' then null else d.claimed_until end
   where d.user_id = finish_account_deletion_step.user_id;
end
$$;
comment on function private.finish_account_deletion_step(uuid, text, text) is
  'Service role: marks a deletion step done, or records its failure with a backoff; final_sweep removes the finished deletion.';
grant execute on function private.finish_account_deletion_step(uuid, text, text) to service_role;

create or replace function public.finish_account_deletion_step(user_id uuid, step text, error text default null)
returns void
language sql security invoker
set search_path = ''
as $$ select private.finish_account_deletion_step(user_id, step, error) $$;
grant execute on function public.finish_account_deletion_step(uuid, text, text) to service_role;
revoke execute on function public.finish_account_deletion_step(uuid, text, text) from public, anon, authenticated;

-- The user's storage objects, a page at a time: everything under the user's folder (the first
-- path segment is the user's id in every bucket) or owned by them, and the copies of images
-- they bought from a seller deleted before them.
create or replace function private.account_storage_objects(user_id uuid, max_rows integer default 1000)
returns table (bucket_id text, name text)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('list a deleted account''s files');
  return query
  select o.bucket_id, o.name from storage.objects o
   where o.name like account_storage_objects.user_id::text || '/%'
      or o.owner_id = account_storage_objects.user_id::text
      or o.owner = account_storage_objects.user_id
      -- Copies of bought images made when their seller was deleted are the buyer's (named by
      -- the deletion row once the buyer's purchases went first).
      or (o.bucket_id = 'tone-packs' and o.name like 'purchases/%'
          and (o.name in (select i.object_name from public.tone_pack_purchase_images i
                            join public.tone_pack_purchases p on p.id = i.purchase_id
                           where p.user_id = account_storage_objects.user_id)
               or o.name in (select unnest(d.bought_image_objects) from private.account_deletions d
                              where d.user_id = account_storage_objects.user_id)))
   order by o.bucket_id, o.name
   limit greatest(coalesce(max_rows, 1000), 1);
end
$$;
grant execute on function private.account_storage_objects(uuid, integer) to service_role;

create or replace function public.account_storage_objects(user_id uuid, max_rows integer default 1000)
returns table (bucket_id text, name text)
language sql stable security invoker
set search_path = ''
as $$ select * from private.account_storage_objects(user_id, max_rows) $$;
grant execute on function public.account_storage_objects(uuid, integer) to service_role;
revoke execute on function public.account_storage_objects(uuid, integer) from public, anon, authenticated;

-- The images other users bought from the user's packs: their purchase rows name objects in the
-- user's folder. The storage step copies each out of it before the folder goes.
create or replace function private.account_images_others_bought(user_id uuid)
returns table (purchase_id uuid, tone text, object_name text)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('list a deleted account''s sold images');
  return query
  select i.purchase_id, i.tone, i.object_name
    from public.tone_pack_purchase_images i
    join public.tone_pack_purchases p on p.id = i.purchase_id
   where i.object_name like account_images_others_bought.user_id::text || '/%'
     and p.user_id <> account_images_others_bought.user_id
   order by i.purchase_id, i.tone;
end
$$;
grant execute on function private.account_images_others_bought(uuid) to service_role;

create or replace function public.account_images_others_bought(user_id uuid)
returns table (purchase_id uuid, tone text, object_name text)
language sql stable security invoker
set search_path = ''
as $$ select * from private.account_images_others_bought(user_id) $$;
grant execute on function public.account_images_others_bought(uuid) to service_role;
revoke execute on function public.account_images_others_bought(uuid) from public, anon, authenticated;

-- Points a buyer's image at its copy outside the deleted seller's folder.
create or replace function private.move_bought_image(purchase_id uuid, tone text, object_name text, url text)
returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('move bought images');
  update public.tone_pack_purchase_images i
     set object_name = move_bought_image.object_name, url = move_bought_image.url
   where i.purchase_id = move_bought_image.purchase_id and i.tone = move_bought_image.tone;
end
$$;
grant execute on function private.move_bought_image(uuid, text, text, text) to service_role;

create or replace function public.move_bought_image(purchase_id uuid, tone text, object_name text, url text)
returns void
language sql security invoker
set search_path = ''
as $$ select private.move_bought_image(purchase_id, tone, object_name, url) $$;
grant execute on function public.move_bought_image(uuid, text, text, text) to service_role;
revoke execute on function public.move_bought_image(uuid, text, text, text) from public, anon, authenticated;
