-- =============================================================================================
-- Account deletion: the rows step
-- =============================================================================================
-- One transaction (private.delete_account_rows): what outlives the user gets the deletion's
-- tombstone id, then the auth user and every row the user owns go; also the triggers that make
-- deleting the auth user by any other path a deletion. The overview: user_data/account.sql.

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
    ('private.setting_changes', 'changed_by', 'set null'),
    ('private.cron_manual_runs', 'run_by', 'set null'),
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
    ('private.sync_tombstones', 'user_id', 'cascade'),
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
    ('public.invitations', 'invited_by', 'cascade'),
    ('public.invitations', 'responded_by', 'cascade'),
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
    ('public.workout_checkin_events', 'user_id', 'cascade'),
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
  -- Rows found by the address only when the account proved it owned it: an unconfirmed sign-up
  -- of someone else's address must not take that person's suppressions (a bounce, a complaint)
  -- or mail with it.
  if d.email is not null and not exists (select 1 from auth.users u
                                          where u.id = target and u.email_confirmed_at is not null) then
    d.email := null;
  end if;
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
