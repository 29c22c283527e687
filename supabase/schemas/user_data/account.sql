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

-- 401 for a user whose account is being deleted: what PostgREST's pre-request and /api's write
-- count both say to such a token.
create or replace function private.refuse_deleted_account(user_id uuid) returns void
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if exists (select 1 from private.account_deletions d where d.user_id = refuse_deleted_account.user_id) then
    raise exception 'This account has been deleted'
      using errcode = 'PT401', hint = 'account_deleted',
            detail = 'Its data is being removed; sign up again to start over.';
  end if;
end
$$;
comment on function private.refuse_deleted_account(uuid) is
  '401 (PT401) when the user''s account is being deleted.';
grant execute on function private.refuse_deleted_account(uuid) to authenticated, service_role;

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
    perform private.refuse_deleted_account((select auth.uid()));
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

-- What other people see of a person (entry authors, member lists, member search, profile
-- cards): their name and avatar, or "Deleted user" and no avatar once their account is being
-- deleted (a row in private.account_deletions, which Auth's soft delete also starts) or gone
-- (has_profile false). For security definer readers that already decided the caller may see
-- the person; one indexed probe per person.
create or replace function private.person_card(person_id uuid, profile_name text, profile_avatar text,
                                               has_profile boolean default true)
returns table (full_name text, avatar_url text)
language sql stable
set search_path = ''
as $$
  select case when s.shown then profile_name else private.deleted_user_name() end,
         case when s.shown then profile_avatar end
    from (select has_profile and not exists (select 1 from private.account_deletions d
                                              where d.user_id = person_id) as shown) s
$$;
revoke all on function private.person_card(uuid, text, text, boolean) from public;

-- Hosted Realtime runs no pre-request either: notifications (the table it publishes) stop at once.
create policy "notifications: nothing for an account being deleted" on public.notifications
  as restrictive for select to authenticated
  using (not (select private.account_being_deleted()));
comment on policy "notifications: nothing for an account being deleted" on public.notifications is
  'Realtime checks each change as the subscriber: a token of an account being deleted is sent nothing.';

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
            hint = 'ownership_transfer_needed';
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
create or replace function private.suspend_account(target uuid) returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  -- A date Auth can read: GoTrue scans banned_until into a Go time, which 'infinity' is not.
  update auth.users set banned_until = now() + interval '100 years' where id = target;
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
      using errcode = 'PT401', hint = 'reauthentication_needed';
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
