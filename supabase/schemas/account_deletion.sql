-- =============================================================================================
-- Account deletion: DELETE /api/user/account and its support variant
-- =============================================================================================
-- A deletion is one row of private.account_deletions, written when it is asked for, and steps
-- that each record when they are done, so a crash halfway is finished by a retry or by the
-- `account-deletions` job:
--   1. request  the row is written (the account's tokens stop working at once: the PostgREST
--               pre-request, /api and Storage refuse them), unless the user owns an
--               organization with other members (409 naming it);
--   2. stripe   the subscription is cancelled and the customer deleted (edge function);
--   3. music    the provider's tokens are revoked where it can, then deleted (edge function);
--   4. storage  every object under the user's folder or owned by the user goes (edge function,
--               through the Storage API; again a day later, for uploads that raced the request);
--   5. rows     one transaction (private.delete_account_rows): organizations the user is alone
--               in go, teams they admin pass to the organization's owner, what outlives the
--               user gets the deletion's tombstone id instead of theirs, then the auth user and
--               with it every row the user owns.
-- What stays (README "Deleting an account"): the impersonation audit, role changes and admin
-- stamps under the tombstone id; AI costs as platform totals; subscriptions (payment records)
-- without a user; drops and messages the user sent, shown as from a deleted user.
-- Deleting the auth user by any other path (Auth's admin API, which the dashboard calls, or SQL)
-- is a deletion too: a trigger on auth.users writes the row (requested_via 'auth') and runs the
-- rows step in the deleting transaction; the provider and storage steps follow in the job. Auth's
-- soft delete asks for the whole deletion, which the job carries out.

-- ---------------------------------------------------------------------------------------------
-- The deletions and their steps
-- ---------------------------------------------------------------------------------------------

create table private.account_deletions (
  user_id uuid primary key,
  tombstone_id uuid not null unique default gen_random_uuid(),
  requested_via text not null check (requested_via in ('self', 'support', 'auth')),
  requested_by uuid,
  requested_at timestamptz not null default now(),
  -- Kept only until the rows step (e-mail logs and the waitlist are found by address).
  email text,
  stripe_customer_ids text[] not null default '{}',
  stripe_subscription_ids text[] not null default '{}',
  stripe_done_at timestamptz,
  music_done_at timestamptz,
  storage_done_at timestamptz,
  rows_done_at timestamptz,
  attempts integer not null default 0,
  last_error text,
  next_attempt_at timestamptz not null default now(),
  claimed_until timestamptz,
  -- Kept only when the rows went before the music and storage steps (the auth user deleted
  -- directly): the provider tokens, encrypted as private.music_tokens held them, until revoked,
  -- and the copies of bought images the user's purchases named, until the storage sweeps.
  music_access_token bytea,
  music_refresh_token bytea,
  bought_image_objects text[] not null default '{}'
);
comment on table private.account_deletions is
  'One row per account being deleted: which steps are done, and the tombstone id that replaces the user''s in what outlives them. No personal data once the rows step is done (the e-mail is cleared); removed after the final storage sweep a day later.';
comment on column private.account_deletions.requested_via is
  'self (the user), support (a super admin or the service role), auth (the auth user was deleted directly: Auth''s admin API, the dashboard, SQL).';
comment on column private.account_deletions.tombstone_id is
  'Stands for the deleted user in kept records (impersonation audit, role changes, admin stamps): a random id that names nobody.';
create index account_deletions_due on private.account_deletions (next_attempt_at);

-- True for a request made with the token of an account being deleted (or deleted within the
-- token's lifetime). One primary-key probe.
create or replace function private.account_being_deleted() returns boolean
language sql stable security definer
set search_path = ''
as $$
  select (select auth.uid()) is not null
     and exists (select 1 from private.account_deletions d where d.user_id = (select auth.uid()))
$$;
comment on function private.account_being_deleted() is
  'True when the request''s user has asked for (or been given) an account deletion.';
grant execute on function private.account_being_deleted() to authenticated, service_role;

-- PostgREST's pre-request function (authenticator role setting pgrst.db_pre_request): a token of
-- an ended impersonation session, or of an account being deleted, is refused with 401; then a
-- request that can write is counted against its caller's write budget (rate_limits.sql: 429 over
-- it). Volatile: the count is a write (reads return before it).
create or replace function private.check_request() returns void
language plpgsql
set search_path = ''
as $$
begin
  perform private.refuse_ended_impersonation();
  -- Anonymous requests have no account (and anon may not run the definer below).
  if (select auth.uid()) is not null then
    if private.account_being_deleted() then
      raise exception 'This account has been deleted'
        using errcode = 'PT401', hint = 'Its data is being removed; sign up again to start over.';
    end if;
  end if;
  perform private.limit_writes();
end
$$;
comment on function private.check_request() is
  'PostgREST db-pre-request: 401 for an ended impersonation session or an account being deleted; 429 for a write over the caller''s write rate limit.';
grant execute on function private.check_request() to anon, authenticated, service_role;

-- Hosted Storage runs no pre-request: the same rule as a restrictive policy.
create policy "storage.objects: nothing for an account being deleted" on storage.objects
  as restrictive for all to authenticated
  using (not (select private.account_being_deleted()))
  with check (not (select private.account_being_deleted()));
comment on policy "storage.objects: nothing for an account being deleted" on storage.objects is
  'A token of an account being deleted lists, reads and writes nothing, so no upload can race the storage step.';

-- True while the user's deletion has not reached its rows step: the rows step may remove the
-- user's rows from append-only audit tables (private.refuse_audit_change).
create or replace function private.account_deletion_in_progress(user_id uuid) returns boolean
language sql stable security definer
set search_path = ''
as $$
  select exists (select 1 from private.account_deletions d
                  where d.user_id = account_deletion_in_progress.user_id and d.rows_done_at is null)
$$;
comment on function private.account_deletion_in_progress(uuid) is
  'True while the user''s account deletion is under way (its rows step not yet done).';

-- What a drop or message from a deleted account shows as its sender.
create or replace function private.deleted_user_name() returns text
language sql immutable
set search_path = ''
as $$ select 'Deleted user' $$;
comment on function private.deleted_user_name() is 'The sender''s name shown for a drop or message whose sender deleted their account.';
grant execute on function private.deleted_user_name() to authenticated, service_role;

-- Hosted Realtime runs no pre-request either: notifications (the table it publishes) stop at once.
create policy "notifications: nothing for an account being deleted" on public.notifications
  as restrictive for select to authenticated
  using (not (select private.account_being_deleted()));
comment on policy "notifications: nothing for an account being deleted" on public.notifications is
  'Realtime checks each change as the subscriber: a token of an account being deleted is sent nothing.';

-- For /api: the PostgREST pre-request (private.check_request) runs before this and refuses a
-- closed token, so a mutating route that reaches a provider with the service role stops first.
create or replace function public.request_allowed() returns boolean
language sql stable
set search_path = ''
as $$ select true $$;
comment on function public.request_allowed() is
  'True; PostgREST''s pre-request refuses an ended impersonation session or an account being deleted before it runs.';
grant execute on function public.request_allowed() to authenticated;

-- Whether new_id is the tombstone of the deletion of old_id: the one change the append-only
-- audit and ledger tables accept (their triggers call this), made by private.delete_account_rows.
create or replace function private.is_tombstone_of(old_id uuid, new_id uuid) returns boolean
language sql stable security definer
set search_path = ''
as $$
  select exists (select 1 from private.account_deletions d where d.user_id = old_id and d.tombstone_id = new_id)
$$;
comment on function private.is_tombstone_of(uuid, uuid) is
  'True when new_id is the tombstone of old_id''s account deletion (append-only tables accept that change only).';

-- For append-only tables' triggers: true when the update changes nothing but the named user
-- columns, each to its deletion's tombstone.
create or replace function private.only_tombstones_changed(old_row jsonb, new_row jsonb, user_columns text[])
returns boolean
language plpgsql stable
set search_path = ''
as $$
declare
  col text;
begin
  if (old_row - user_columns) is distinct from (new_row - user_columns) then
    return false;
  end if;
  foreach col in array user_columns loop
    if (old_row ->> col) is distinct from (new_row ->> col)
       and not private.is_tombstone_of((old_row ->> col)::uuid, (new_row ->> col)::uuid) then
      return false;
    end if;
  end loop;
  return true;
end
$$;
comment on function private.only_tombstones_changed(jsonb, jsonb, text[]) is
  'Append-only triggers: an update that only swaps deleted users'' ids for their tombstones is allowed.';

-- ---------------------------------------------------------------------------------------------
-- Asking for a deletion
-- ---------------------------------------------------------------------------------------------

-- The organizations the user owns that have other members: a deletion waits until each has
-- another owner. Names and member counts, for the 409.
create or replace function private.account_deletion_blockers(target uuid) returns jsonb
language sql stable security definer
set search_path = ''
as $$
  select coalesce(jsonb_agg(jsonb_build_object('id', o.id, 'name', o.name, 'other_members', n.others)
                            order by o.name, o.id), '[]'::jsonb)
    from public.organizations o
   cross join lateral (select count(*) as others from public.organization_members m
                        where m.org_id = o.id and m.user_id <> target) n
   where o.owner_id = target and n.others > 0
$$;
comment on function private.account_deletion_blockers(uuid) is
  'Organizations the user owns that have other members (name and count): ownership must pass before the account can go.';

-- Raises 409 when the user still owns organizations with other members.
create or replace function private.refuse_account_deletion_while_owning(target uuid) returns void
language plpgsql stable
set search_path = ''
as $$
declare
  blockers jsonb := private.account_deletion_blockers(target);
begin
  if jsonb_array_length(blockers) > 0 then
    raise exception 'Transfer ownership first: the account owns organizations with other members (%)',
      (select string_agg(format('%s: %s other member%s', b ->> 'name', b ->> 'other_members',
                                case when (b ->> 'other_members')::integer = 1 then '' else 's' end), '; ')
         from jsonb_array_elements(blockers) b)
      using errcode = 'PT409', detail = blockers::text,
            hint = 'POST /api/organizations/{id}/transfer-ownership to another member, or remove the members.';
  end if;
end
$$;

-- How a deletion stands, as the routes answer it.
create or replace function private.account_deletion_status(d private.account_deletions) returns jsonb
language sql stable
set search_path = ''
as $$
  select jsonb_build_object(
    'user_id', d.user_id,
    'requested_at', d.requested_at,
    'requested_via', d.requested_via,
    'status', case when d.rows_done_at is not null then 'deleted' else 'pending' end,
    'steps', jsonb_build_object('stripe', d.stripe_done_at is not null, 'music', d.music_done_at is not null,
                                'storage', d.storage_done_at is not null, 'rows', d.rows_done_at is not null),
    'last_error', d.last_error)
$$;

-- Writes the deletion row after the checks every path shares: not the assistant, not the last
-- super admin, no organization with other members left without its owner (409s). Called by
-- request_account_deletion and by the auth.users delete trigger (via 'auth').
create or replace function private.start_account_deletion(target uuid, via text, requested_by uuid)
returns private.account_deletions
language plpgsql security definer
set search_path = ''
as $$
declare
  row private.account_deletions;
begin
  if not exists (select 1 from auth.users where id = target) then
    raise exception 'no user %', target using errcode = 'PT404';
  end if;
  if target = private.assistant_user_id() then
    raise exception 'The assistant''s account is the system''s and cannot be deleted' using errcode = 'PT409';
  end if;
  -- The same lock as a demotion (private.guard_last_super_admin): two admins deleting or
  -- demoting each other cannot both pass; admins already being deleted do not count.
  perform pg_advisory_xact_lock(hashtext('public.profiles super_admin demotion'));
  if exists (select 1 from public.profiles p where p.id = target and p.role = 'super_admin')
     and not exists (select 1 from public.profiles p
                      where p.role = 'super_admin' and p.is_active and p.id <> target
                        and not exists (select 1 from private.account_deletions d where d.user_id = p.id)) then
    raise exception 'The last super admin cannot be deleted: make another user super admin first'
      using errcode = 'PT409';
  end if;
  perform private.refuse_account_deletion_while_owning(target);
  insert into private.account_deletions (user_id, requested_via, requested_by, email,
                                         stripe_customer_ids, stripe_subscription_ids)
  values (target, via, requested_by, (select u.email from auth.users u where u.id = target),
          coalesce((select array_agg(distinct x.id) from (
                      select c.stripe_customer_id as id from private.stripe_customers c where c.user_id = target
                      union select s.stripe_customer_id from public.subscriptions s where s.user_id = target) x
                     where x.id is not null), '{}'),
          coalesce((select array_agg(s.stripe_subscription_id order by s.created_at) from public.subscriptions s
                     where s.user_id = target and s.stripe_subscription_id is not null
                       and s.status not in ('canceled', 'incomplete_expired')), '{}'))
  on conflict (user_id) do nothing
  returning * into row;
  if row.user_id is null then
    select * into row from private.account_deletions where user_id = target;
  end if;
  return row;
end
$$;
comment on function private.start_account_deletion(uuid, text, uuid) is
  'Writes an account deletion (with the Stripe ids its step needs) after the checks every path shares; 409 for the assistant, the last super admin or an owner of an organization with other members.';

-- An account whose deletion was asked for stops at once: sign-ins end (the auth user itself goes
-- in the rows step), and until the rows go nothing runs for it: jobs skip inactive profiles and
-- links that need reconnecting, and the packs it sells leave the shop (buyers keep theirs).
-- The ban is a real date: GoTrue reads banned_until into a Go time, which 'infinity' is not, so
-- an infinite ban made the user unreadable (500 on every lookup, the admin list included).
create or replace function private.suspend_account(target uuid) returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  update auth.users set banned_until = '9999-12-31 00:00:00+00' where id = target;
  delete from auth.sessions where user_id = target;
  update public.profiles set is_active = false where id = target;
  update public.music_connections set needs_reconnect = true where user_id = target;
  update public.tone_packs set retired_at = now(), is_public = false where owner_id = target and retired_at is null;
end
$$;
comment on function private.suspend_account(uuid) is
  'Stops an account whose deletion was asked for until its rows step: banned, signed out, inactive, its packs out of the shop.';

-- Asks for a deletion (idempotent: a second request returns the first). From the user
-- themselves ('self': not inside an impersonation session, with a fresh sign-in checked by
-- the caller) or a super admin / the service role ('support').
create or replace function private.request_account_deletion(target uuid, via text) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  me constant uuid := (select auth.uid());
  row private.account_deletions;
begin
  if target is null then
    raise exception 'user_id: required' using errcode = '22023';
  end if;
  if via = 'self' then
    if me is null or me <> target then
      raise exception 'sign in first' using errcode = '42501';
    end if;
    perform private.refuse_while_impersonating('deleting the account');
  elsif via = 'support' then
    perform private.require_trusted_caller('delete other users'' accounts');
    perform private.refuse_while_impersonating('deleting an account');
  else
    raise exception 'via: self or support' using errcode = '22023';
  end if;
  select * into row from private.account_deletions where user_id = target;
  if found then
    return private.account_deletion_status(row);
  end if;
  row := private.start_account_deletion(target, via, me);
  perform private.suspend_account(target);
  return private.account_deletion_status(row);
end
$$;
comment on function private.request_account_deletion(uuid, text) is
  'Starts deleting an account (self or support): 409 while it owns organizations with other members; idempotent.';
grant execute on function private.request_account_deletion(uuid, text) to authenticated, service_role;

-- True when the token is from a sign-in of the last 10 minutes: issued (iat) that recently, and
-- when it carries Auth's amr (sign-in methods with their times), its latest sign-in too, so a
-- token refreshed long after signing in does not count.
create or replace function private.signed_in_recently(max_age interval default interval '10 minutes')
returns boolean
language sql stable
set search_path = ''
as $$
  with claims as (select nullif(current_setting('request.jwt.claims', true), '')::jsonb as c)
  select coalesce(to_timestamp((c ->> 'iat')::double precision) > now() - max_age, false)
     and (jsonb_typeof(c -> 'amr') is distinct from 'array'
          or coalesce((select to_timestamp(max((a ->> 'timestamp')::double precision))
                         from jsonb_array_elements(c -> 'amr') a) > now() - max_age, false))
    from claims
$$;
comment on function private.signed_in_recently(interval) is
  'The request''s token comes from a sign-in within max_age (iat, and the newest amr timestamp when present).';
grant execute on function private.signed_in_recently(interval) to authenticated, service_role;

-- RPC: the signed-in user deletes their own account (the same rules as DELETE /api/user/account).
create or replace function public.delete_my_account(confirm text) returns jsonb
language plpgsql security invoker
set search_path = ''
as $$
begin
  if confirm is distinct from 'DELETE' then
    raise exception 'confirm: must be the word DELETE' using errcode = '22023';
  end if;
  if not private.signed_in_recently() then
    raise exception 'Sign in again to delete the account: it needs a sign-in from the last 10 minutes'
      using errcode = 'PT401';
  end if;
  return private.request_account_deletion((select auth.uid()), 'self');
end
$$;
comment on function public.delete_my_account(text) is
  'Deletes the caller''s account (confirm = ''DELETE'', a sign-in of the last 10 minutes). Returns the deletion''s status; the job or /api finishes the provider and storage steps.';
grant execute on function public.delete_my_account(text) to authenticated;

-- RPC: a super admin deletes a user's account (support).
create or replace function public.admin_delete_account(user_id uuid, confirm text) returns jsonb
language plpgsql security invoker
set search_path = ''
as $$
begin
  if confirm is distinct from 'DELETE' then
    raise exception 'confirm: must be the word DELETE' using errcode = '22023';
  end if;
  return private.request_account_deletion(admin_delete_account.user_id, 'support');
end
$$;
comment on function public.admin_delete_account(uuid, text) is
  'Super admins and the service role: deletes a user''s account (confirm = ''DELETE''). 409 while it owns organizations with other members.';
grant execute on function public.admin_delete_account(uuid, text) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Running the steps (service role: /api right after the request, and the job)
-- ---------------------------------------------------------------------------------------------

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

-- ---------------------------------------------------------------------------------------------
-- The rows step: one transaction
-- ---------------------------------------------------------------------------------------------

-- Platform AI totals of deleted accounts, per month and type (what ai_usage_monthly held for
-- them), so the platform's costs do not drop when a user goes.
create table private.ai_usage_of_deleted_accounts (
  month date not null check (extract(day from month) = 1),
  usage_type text not null,
  calls bigint not null default 0,
  input_tokens bigint not null default 0,
  output_tokens bigint not null default 0,
  image_count bigint not null default 0,
  cost_usd numeric(20, 10) not null default 0,
  primary key (month, usage_type)
);
comment on table private.ai_usage_of_deleted_accounts is
  'AI usage of deleted accounts, summed per month and type without any user: platform cost totals outlive the users.';

-- Super admins: the platform's AI usage per month and type, deleted accounts included.
create or replace function private.ai_usage_platform_totals(from_month date default null, to_month date default null)
returns table (month date, usage_type text, calls bigint, input_tokens bigint, output_tokens bigint,
               image_count bigint, cost_usd numeric)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('read platform AI totals');
  return query
  select t.month, t.usage_type, sum(t.calls)::bigint, sum(t.input_tokens)::bigint, sum(t.output_tokens)::bigint,
         sum(t.image_count)::bigint, sum(t.cost_usd)
    from (select m.month, m.usage_type, m.calls::bigint as calls, m.input_tokens, m.output_tokens,
                 m.image_count::bigint as image_count, m.cost_usd
            from public.ai_usage_monthly m
          union all
          select d.month, d.usage_type, d.calls, d.input_tokens, d.output_tokens, d.image_count, d.cost_usd
            from private.ai_usage_of_deleted_accounts d) t
   where (from_month is null or t.month >= from_month) and (to_month is null or t.month <= to_month)
   group by t.month, t.usage_type
   order by t.month, t.usage_type;
end
$$;
grant execute on function private.ai_usage_platform_totals(date, date) to authenticated, service_role;

create or replace function public.ai_usage_platform_totals(from_month date default null, to_month date default null)
returns table (month date, usage_type text, calls bigint, input_tokens bigint, output_tokens bigint,
               image_count bigint, cost_usd numeric)
language sql stable security invoker
set search_path = ''
as $$ select * from private.ai_usage_platform_totals(from_month, to_month) $$;
comment on function public.ai_usage_platform_totals(date, date) is
  'Super admins: AI usage and cost per month and type for the whole platform, deleted accounts included.';
grant execute on function public.ai_usage_platform_totals(date, date) to authenticated, service_role;

-- Where each column that names a user stands when the user is deleted: the list the schema
-- walk in tests/user_deletion_test.ts checks every such column against (a new user column
-- without a line here fails it). handling: cascade / set null (the foreign key does it), dissolved (a squad goes, by trigger),
-- tombstone (the id becomes the deletion's tombstone), deleted (rows removed by
-- delete_account_rows), relinked (workout chains: the neighbours join up), kept a day (the
-- deletion record itself, until its final sweep), follows its drop (the engagement queue's copy
-- of a drop's parties: the drop's cascade removes the row, its set null is copied by trigger).
create or replace function private.account_deletion_columns()
returns table (table_name text, column_name text, handling text)
language sql immutable
set search_path = ''
as $$
  values
    ('private.account_deletions', 'user_id', 'kept a day'),
    ('private.account_deletions', 'requested_by', 'kept a day'),
    ('private.music_tokens', 'user_id', 'cascade'),
    ('auth.identities', 'user_id', 'cascade'),
    ('auth.flow_state', 'user_id', 'deleted'),
    ('auth.sessions', 'user_id', 'cascade'),
    ('public.profiles', 'id', 'cascade'),
    ('private.user_search', 'user_id', 'cascade'),
    ('public.ai_usage', 'user_id', 'cascade'),
    ('public.ai_usage_monthly', 'user_id', 'cascade'),
    ('private.ai_daily_calls', 'user_id', 'cascade'),
    ('public.ai_prices', 'created_by', 'tombstone'),
    ('public.token_conversion_rates', 'created_by', 'tombstone'),
    ('public.drops_transactions', 'user_id', 'cascade'),
    ('public.drops_transactions', 'created_by', 'tombstone'),
    ('public.monthly_drop_awards', 'user_id', 'cascade'),
    ('public.encouragement_config', 'updated_by', 'tombstone'),
    ('public.encouragement_config_changes', 'changed_by', 'set null'),
    ('public.encouragement_templates', 'created_by', 'set null'),
    ('public.encouragement_daily_drops', 'user_id', 'cascade'),
    ('public.encouragement_sent_drops', 'sender_id', 'set null'),
    ('public.encouragement_sent_drops', 'recipient_id', 'cascade'),
    ('private.encouragement_sent_drops_purged', 'sender_id', 'cascade'),
    ('private.encouragement_bonus_pairs', 'sender_id', 'deleted'),
    ('private.encouragement_bonus_pairs', 'recipient_id', 'deleted'),
    ('private.encouragement_unjudged_drops', 'sender_id', 'follows its drop'),
    ('private.encouragement_unjudged_drops', 'recipient_id', 'follows its drop'),
    ('public.encouragement_badges', 'user_id', 'cascade'),
    ('public.encouragement_badge_milestones', 'user_id', 'cascade'),
    ('public.note_analyses', 'user_id', 'cascade'),
    ('private.ai_job_queue', 'user_id', 'cascade'),
    ('public.goals', 'user_id', 'cascade'),
    ('public.goal_check_ins', 'user_id', 'cascade'),
    ('public.impersonation_audit', 'admin_id', 'tombstone'),
    ('public.impersonation_audit', 'target_id', 'tombstone'),
    ('public.impersonation_writes', 'admin_id', 'tombstone'),
    ('public.impersonation_writes', 'target_id', 'tombstone'),
    ('public.role_changes', 'user_id', 'tombstone'),
    ('public.role_changes', 'changed_by', 'tombstone'),
    ('public.notebooks', 'user_id', 'cascade'),
    ('public.journal_entries', 'user_id', 'cascade'),
    ('public.journal_entry_contents', 'user_id', 'cascade'),
    ('public.journal_entry_mentions', 'mentioned_user_id', 'cascade'),
    ('private.labs_sponsor_private', 'applicant_id', 'cascade'),
    ('private.labs_opportunity_private', 'submitter_id', 'cascade'),
    ('private.labs_dream_video_private', 'submitter_id', 'cascade'),
    ('public.labs_classroom_accounts', 'user_id', 'cascade'),
    ('public.labs_classroom_accounts', 'set_by', 'set null'),
    ('public.labs_experiments', 'owner_id', 'cascade'),
    ('public.labs_activity_events', 'user_id', 'cascade'),
    ('public.labs_replications', 'user_id', 'cascade'),
    ('public.labs_replication_removals', 'user_id', 'deleted'),
    ('public.labs_replication_removals', 'removed_by', 'tombstone'),
    ('public.labs_competition_participants', 'user_id', 'cascade'),
    ('private.labs_step_prompts', 'user_id', 'cascade'),
    ('public.labs_sponsor_messages', 'sender_id', 'set null'),
    ('public.labs_kit_waitlist', 'user_id', 'deleted'),
    ('public.music_connections', 'user_id', 'cascade'),
    ('private.music_oauth_states', 'user_id', 'cascade'),
    ('public.music_plays', 'user_id', 'cascade'),
    ('public.notifications', 'user_id', 'cascade'),
    ('public.notification_devices', 'user_id', 'cascade'),
    ('public.notification_preferences', 'user_id', 'cascade'),
    ('private.notification_digests', 'user_id', 'cascade'),
    ('private.notification_deliveries', 'user_id', 'cascade by notification'),
    ('public.organizations', 'owner_id', 'deleted'),
    ('public.organization_members', 'user_id', 'deleted'),
    ('public.teams', 'admin_id', 'deleted'),
    ('public.team_members', 'user_id', 'cascade'),
    ('public.subscriptions', 'user_id', 'set null'),
    ('private.stripe_customers', 'user_id', 'cascade'),
    ('public.email_messages', 'user_id', 'cascade'),
    ('public.tone_packs', 'owner_id', 'cascade'),
    ('public.tone_pack_shares', 'user_id', 'cascade'),
    ('public.tone_pack_purchases', 'user_id', 'cascade'),
    ('public.workout_windows', 'user_id', 'cascade'),
    ('public.workout_locations', 'user_id', 'cascade'),
    ('public.workout_checkins', 'user_id', 'cascade'),
    ('public.workout_checkins', 'reviewed_by', 'set null'),
    ('private.workout_photos', 'user_id', 'cascade'),
    ('public.workout_ai_users', 'user_id', 'cascade'),
    ('public.workout_chains', 'user_id', 'relinked'),
    ('public.workout_chains', 'before_user_id', 'relinked'),
    ('public.workout_chains', 'after_user_id', 'relinked'),
    ('public.workout_squads', 'user_1_id', 'dissolved'),
    ('public.workout_squads', 'user_2_id', 'dissolved'),
    ('public.workout_squads', 'user_3_id', 'dissolved')
$$;
comment on function private.account_deletion_columns() is
  'Every column that names a user, and what deleting the user does to it (checked against the catalog by tests/user_deletion_test.ts).';

-- The rows step's work, run by the auth.users delete trigger below (so the API's rows step and a
-- direct delete of the auth user do the same): blockers checked again, organizations the user is
-- alone in deleted, memberships left (teams they admin pass to the owner:
-- private.leave_org_teams), what outlives the user moved to the tombstone, other users'
-- notifications cleared of the id, AI usage added to the platform totals, e-mail traces removed,
-- what the provider and storage steps still need kept in the deletion row. The auth user's
-- delete then takes, by cascade, the profile and every row the user owns (workout chains relink
-- by trigger).
create or replace function private.remove_account_rows(target uuid) returns void
language plpgsql security definer
set search_path = ''
as $$
declare
  d private.account_deletions;
  tomb uuid;
begin
  select * into strict d from private.account_deletions where user_id = target for update;
  tomb := d.tombstone_id;
  perform private.refuse_account_deletion_while_owning(target);

  -- Organizations: the ones the user is alone in go; memberships elsewhere end.
  delete from public.organizations o where o.owner_id = target;
  delete from public.organization_members m where m.user_id = target;

  -- Kept records: the tombstone stands for the user.
  update public.impersonation_audit set admin_id = tomb where admin_id = target;
  update public.impersonation_audit set target_id = tomb where target_id = target;
  update public.impersonation_writes set admin_id = tomb where admin_id = target;
  update public.impersonation_writes set target_id = tomb where target_id = target;
  update public.role_changes set user_id = tomb where user_id = target;
  update public.role_changes set changed_by = tomb where changed_by = target;
  update public.drops_transactions set created_by = tomb where created_by = target;
  update public.ai_prices set created_by = tomb where created_by = target;
  update public.token_conversion_rates set created_by = tomb where created_by = target;
  update public.encouragement_config set updated_by = tomb where updated_by = target;
  update public.labs_replication_removals set removed_by = tomb where removed_by = target;
  delete from public.labs_replication_removals where user_id = target;

  -- Other users' notifications that name the user keep their text, not the id.
  update public.notifications n
     set payload = (select jsonb_object_agg(k, case when v = to_jsonb(target::text) then 'null'::jsonb else v end)
                      from jsonb_each(n.payload) e(k, v))
   where n.payload::text like '%' || target::text || '%' and n.user_id <> target;

  -- Platform AI totals keep the user's usage, without the user.
  insert into private.ai_usage_of_deleted_accounts as t
         (month, usage_type, calls, input_tokens, output_tokens, image_count, cost_usd)
  select m.month, m.usage_type, m.calls, m.input_tokens, m.output_tokens, m.image_count, m.cost_usd
    from public.ai_usage_monthly m where m.user_id = target
  on conflict (month, usage_type) do update set
    calls = t.calls + excluded.calls, input_tokens = t.input_tokens + excluded.input_tokens,
    output_tokens = t.output_tokens + excluded.output_tokens, image_count = t.image_count + excluded.image_count,
    cost_usd = t.cost_usd + excluded.cost_usd;

  delete from private.encouragement_bonus_pairs b where b.sender_id = target or b.recipient_id = target;
  delete from public.labs_kit_waitlist k where k.user_id = target or k.email = lower(d.email);
  if d.email is not null then
    delete from private.email_suppressions s where s.address = lower(d.email);
    delete from private.inbound_emails e where lower(e.from_address) = lower(d.email);
    delete from private.email_events e where e.payload -> 'data' -> 'to' ? d.email
                                          or e.payload -> 'data' -> 'to' ? lower(d.email);
  end if;
  delete from auth.flow_state f where f.user_id = target;

  update private.account_deletions x
     set rows_done_at = now(), email = null,
         -- Steps still to come find here what the cascade is about to remove.
         music_access_token = case when x.music_done_at is null
                                   then (select t.access_token from private.music_tokens t where t.user_id = target) end,
         music_refresh_token = case when x.music_done_at is null
                                    then (select t.refresh_token from private.music_tokens t where t.user_id = target) end,
         bought_image_objects = case when x.storage_done_at is null then coalesce(
           (select array_agg(i.object_name order by i.object_name) from public.tone_pack_purchase_images i
              join public.tone_pack_purchases p on p.id = i.purchase_id
             where p.user_id = target and i.object_name like 'purchases/%'), '{}') else '{}' end
   where x.user_id = target;
end
$$;
comment on function private.remove_account_rows(uuid) is
  'The database part of an account deletion, run inside the delete of the auth user (see the comment above it).';

-- Any delete of an auth user is an account deletion: the API's rows step (its row is there), or
-- Auth's admin API, the dashboard or SQL (no row yet: one is written, requested_via 'auth', with
-- the same refusals, so an owner of an organization with other members cannot be deleted this
-- way either and Auth answers its database error). The rows go here, in the deleting
-- transaction; the Stripe, music and storage steps are left to the account-deletions job.
create or replace function private.delete_account_with_auth_user() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  d private.account_deletions;
begin
  select * into d from private.account_deletions where user_id = old.id for update;
  if not found then
    d := private.start_account_deletion(old.id, 'auth', null);
  end if;
  if d.rows_done_at is null then
    perform private.remove_account_rows(old.id);
  end if;
  return old;
end
$$;
comment on function private.delete_account_with_auth_user() is
  'Trigger: deleting an auth user by any path runs the rows step of an account deletion and queues its other steps.';
create trigger delete_account_with_auth_user
  before delete on auth.users
  for each row execute function private.delete_account_with_auth_user();

-- Auth's soft delete (the admin API with should_soft_delete) keeps the auth user's row with
-- deleted_at and clears its address: the account's data must go all the same. The whole deletion
-- is asked for (requested_via 'auth', the same refusals: Auth answers its database error) and
-- the job runs every step, its rows step deleting the auth user as for any deletion.
create or replace function private.delete_account_of_soft_deleted_user() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  if old.deleted_at is null and new.deleted_at is not null
     and not exists (select 1 from private.account_deletions d where d.user_id = new.id) then
    perform private.start_account_deletion(new.id, 'auth', null);
    -- The address was cleared by the soft delete; the rows step finds e-mail traces by it.
    update private.account_deletions d set email = old.email where d.user_id = new.id;
    perform private.suspend_account(new.id);
  end if;
  return null;
end
$$;
comment on function private.delete_account_of_soft_deleted_user() is
  'Trigger: a soft delete of an auth user (deleted_at set) asks for the account''s deletion, which the job carries out.';
create trigger delete_account_of_soft_deleted_user
  after update of deleted_at on auth.users
  for each row execute function private.delete_account_of_soft_deleted_user();

-- The rows step (service role: /api and the job, after the provider and storage steps): the
-- delete of the auth user, whose trigger does the work in the same transaction.
create or replace function private.delete_account_rows(target uuid) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  d private.account_deletions;
begin
  perform private.require_trusted_caller('delete account rows');
  select * into d from private.account_deletions where user_id = target for update;
  if not found then
    raise exception 'no deletion was asked for user %', target using errcode = 'PT404';
  end if;
  if d.rows_done_at is null then
    delete from auth.users u where u.id = target;
    if not found then
      -- The auth user went before its delete ran this step (before the trigger existed).
      perform private.remove_account_rows(target);
    end if;
    select * into d from private.account_deletions where user_id = target;
  end if;
  return private.account_deletion_status(d);
end
$$;
comment on function private.delete_account_rows(uuid) is
  'Service role: the rows step of an account deletion, in one transaction (private.remove_account_rows, through the auth user''s delete).';
grant execute on function private.delete_account_rows(uuid) to service_role;

create or replace function public.delete_account_rows(target uuid) returns jsonb
language sql security invoker
set search_path = ''
as $$ select private.delete_account_rows(target) $$;
grant execute on function public.delete_account_rows(uuid) to service_role;
revoke execute on function public.delete_account_rows(uuid) from public, anon, authenticated;

-- The caller-facing status of a deletion (super admins and the service role).
create or replace function private.account_deletion(user_id uuid) returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
declare
  d private.account_deletions;
begin
  perform private.require_trusted_caller('read account deletions');
  select * into d from private.account_deletions x where x.user_id = account_deletion.user_id;
  if not found then
    return null;
  end if;
  return private.account_deletion_status(d);
end
$$;
grant execute on function private.account_deletion(uuid) to authenticated, service_role;

create or replace function public.account_deletion(user_id uuid) returns jsonb
language sql stable security invoker
set search_path = ''
as $$ select private.account_deletion(user_id) $$;
comment on function public.account_deletion(uuid) is
  'Super admins: how an account deletion stands (null when none is under way or the last sweep is done).';
grant execute on function public.account_deletion(uuid) to authenticated, service_role;
