-- The admin console (issue 37): the Features page's audited changes of the write budgets
-- (private.setting_changes, admin_set_write_rate_limit, admin_setting_changes, the limits kept in
-- rows: admin_limit_settings) and the Open energy page's list of flagged anomalies
-- (labs_flagged_anomalies). The audit's changed_by gets its account-deletion rule.

-- ---------------------------------------------------------------------------------------------
-- Settings changed from the admin console (its Features page), audited
-- ---------------------------------------------------------------------------------------------
-- Every change a super admin makes there: who, when, which setting (such as
-- write_rate_limits:user:*), the value before (null: there was no row) and after. Read and
-- written only through the functions below.
create table private.setting_changes (
  id bigint generated always as identity primary key,
  changed_by uuid references public.profiles (id) on delete set null,
  changed_at timestamptz not null default now(),
  setting text not null check (char_length(setting) between 1 and 300),
  old_value jsonb,
  new_value jsonb
);
alter table private.setting_changes enable row level security;
comment on table private.setting_changes is
  'Settings changed from the admin console: who, when, which setting, the value before (null: none) and after.';

create index setting_changes_newest on private.setting_changes (changed_at desc, id desc);

create index setting_changes_by on private.setting_changes (changed_by);

-- Super admins: sets one write budget, the default of a kind of caller (subject '*') or the
-- override of one user id or address, and records the change. Each field is validated by name.
create or replace function private.admin_set_write_rate_limit(
  subject_kind text, subject text, max_writes integer, window_seconds integer
) returns table (id bigint, changed_by uuid, changed_at timestamptz, setting text, old_value jsonb, new_value jsonb)
language plpgsql security definer
set search_path = ''
as $$
declare
  who text := btrim(coalesce(subject, ''));
  before jsonb;
  after jsonb;
begin
  perform private.require_trusted_caller('change write rate limits');
  perform private.check_required('subject_kind', subject_kind);
  perform private.check_one_of('subject_kind', subject_kind, array['user', 'address']);
  perform private.check_required('max_writes', max_writes);
  perform private.check_between('max_writes', max_writes, 0, 1000000000);
  perform private.check_required('window_seconds', window_seconds);
  perform private.check_between('window_seconds', window_seconds, 1, 86400);
  if who = '' then
    raise exception 'subject: must not be empty (''*'' is the default of its kind)' using errcode = '23514';
  end if;
  if who <> '*' and subject_kind = 'user' then
    if who !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
      raise exception 'subject: a user id (uuid) or ''*''' using errcode = '23514';
    end if;
    who := lower(who);
  elsif who <> '*' then
    -- The form private.client_address gives the address (IPv6: its /64), so the row matches.
    who := private.client_address(jsonb_build_object('cf-connecting-ip', who));
    if who = 'unknown' then
      raise exception 'subject: an IP address or ''*''' using errcode = '23514';
    end if;
  end if;
  select jsonb_build_object('max_writes', l.max_writes, 'window_seconds', l.window_seconds) into before
    from private.write_rate_limits l
   where l.subject_kind = admin_set_write_rate_limit.subject_kind and l.subject = who
     for update;
  -- A merge (the migrations' one insert of this table stays the defaults' row, as
  -- tests/ratelimit_test.ts reads them); the row, when there is one, is locked above.
  merge into private.write_rate_limits l
  using (select admin_set_write_rate_limit.subject_kind as kind, who as subject_text,
                admin_set_write_rate_limit.max_writes as writes, admin_set_write_rate_limit.window_seconds as secs) v
     on l.subject_kind = v.kind and l.subject = v.subject_text
   when matched then update set max_writes = v.writes, window_seconds = v.secs
   when not matched then insert (subject_kind, subject, max_writes, window_seconds)
                         values (v.kind, v.subject_text, v.writes, v.secs);
  after := jsonb_build_object('max_writes', max_writes, 'window_seconds', window_seconds);
  return query
    insert into private.setting_changes as c (changed_by, setting, old_value, new_value)
    values ((select auth.uid()), format('write_rate_limits:%s:%s', subject_kind, who), before, after)
    returning c.id, c.changed_by, c.changed_at, c.setting, c.old_value, c.new_value;
end
$$;
comment on function private.admin_set_write_rate_limit(text, text, integer, integer) is
  'Super admins: sets the write budget of a kind of caller (subject *) or of one user id or address; audited in private.setting_changes.';
grant execute on function private.admin_set_write_rate_limit(text, text, integer, integer) to authenticated, service_role;

create or replace function public.admin_set_write_rate_limit(
  subject_kind text, subject text, max_writes integer, window_seconds integer
) returns table (id bigint, changed_by uuid, changed_at timestamptz, setting text, old_value jsonb, new_value jsonb)
language sql security invoker
set search_path = ''
as $$ select * from private.admin_set_write_rate_limit(subject_kind, subject, max_writes, window_seconds) $$;
comment on function public.admin_set_write_rate_limit(text, text, integer, integer) is
  'Super admins: sets one write budget (subject * is the default of its kind); returns the audit row (who, when, old, new).';
grant execute on function public.admin_set_write_rate_limit(text, text, integer, integer) to authenticated, service_role;

-- Super admins: the changes, newest first (keyset: before_time, before_id).
create or replace function private.admin_setting_changes(
  page_size integer default 50, before_time timestamptz default null, before_id bigint default null
) returns table (id bigint, changed_by uuid, changed_by_email text, changed_at timestamptz, setting text,
                 old_value jsonb, new_value jsonb)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('read the settings audit');
  return query
    select c.id, c.changed_by, u.email::text, c.changed_at, c.setting, c.old_value, c.new_value
      from private.setting_changes c
      left join auth.users u on u.id = c.changed_by
     where before_time is null or (c.changed_at, c.id) < (before_time, before_id)
     order by c.changed_at desc, c.id desc
     limit least(greatest(coalesce(page_size, 50), 1), 101);
end
$$;
grant execute on function private.admin_setting_changes(integer, timestamptz, bigint) to authenticated, service_role;

create or replace function public.admin_setting_changes(
  page_size integer default 50, before_time timestamptz default null, before_id bigint default null
) returns table (id bigint, changed_by uuid, changed_by_email text, changed_at timestamptz, setting text,
                 old_value jsonb, new_value jsonb)
language sql stable security invoker
set search_path = ''
as $$ select * from private.admin_setting_changes(page_size, before_time, before_id) $$;
comment on function public.admin_setting_changes(integer, timestamptz, bigint) is
  'Super admins: settings changed from the admin console (who, when, old, new), newest first.';
grant execute on function public.admin_setting_changes(integer, timestamptz, bigint) to authenticated, service_role;

-- Super admins: the limits that live in database rows: write budgets, AI daily caps per usage
-- type (the api may override one with AI_DAILY_CAP_<TYPE>), the e-mail daily cap.
create or replace function private.admin_limit_settings() returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('read the limit settings');
  return jsonb_build_object(
    'write_rate_limits', coalesce((
      select jsonb_agg(jsonb_build_object('subject_kind', l.subject_kind, 'subject', l.subject,
                                          'max_writes', l.max_writes, 'window_seconds', l.window_seconds)
                       order by l.subject_kind, l.subject <> '*', l.subject)
        from private.write_rate_limits l), '[]'::jsonb),
    'ai_usage_types', coalesce((
      select jsonb_agg(jsonb_build_object('usage_type', t.usage_type, 'category', t.category,
                                          'daily_cap_per_user', t.daily_cap_per_user) order by t.usage_type)
        from private.ai_usage_types t), '[]'::jsonb),
    'email_daily_cap', (select s.daily_cap from private.email_settings s));
end
$$;
grant execute on function private.admin_limit_settings() to authenticated, service_role;

create or replace function public.admin_limit_settings() returns jsonb
language sql stable security invoker
set search_path = ''
as $$ select private.admin_limit_settings() $$;
comment on function public.admin_limit_settings() is
  'Super admins: the limits kept in database rows (write budgets, AI daily caps per type, the e-mail daily cap).';
grant execute on function public.admin_limit_settings() to authenticated, service_role;

-- Super admins: every replication flagged as an anomaly (> 2 sample standard deviations from its
-- template's mean, templates with at least 3 replications), newest first, with its template.
create or replace function private.labs_flagged_anomalies(
  page_size integer default 50, before_time timestamptz default null, before_id uuid default null
) returns table (id uuid, template_id uuid, template_title text, user_id uuid, measured_value double precision,
                 predicted_value double precision, mean numeric, stddev numeric, replications integer,
                 created_at timestamptz)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('read flagged anomalies');
  return query
    with m as (
      select r.template_id, count(*)::integer as n, avg(r.measured_value::numeric) as mean,
             stddev_samp(r.measured_value::numeric) as sd
        from public.labs_replications r
       group by r.template_id
      having count(*) >= 3
    )
    select r.id, r.template_id, e.title, r.user_id, r.measured_value, r.predicted_value, trim_scale(m.mean),
           trim_scale(m.sd), m.n, r.created_at
      from public.labs_replications r
      join m on m.template_id = r.template_id
      join public.labs_experiments e on e.id = r.template_id
     where abs(r.measured_value::numeric - m.mean) > 2 * m.sd
       and (before_time is null or (r.created_at, r.id) < (before_time, before_id))
     order by r.created_at desc, r.id desc
     limit least(greatest(coalesce(page_size, 50), 1), 101);
end
$$;
grant execute on function private.labs_flagged_anomalies(integer, timestamptz, uuid) to authenticated, service_role;

create or replace function public.labs_flagged_anomalies(
  page_size integer default 50, before_time timestamptz default null, before_id uuid default null
) returns table (id uuid, template_id uuid, template_title text, user_id uuid, measured_value double precision,
                 predicted_value double precision, mean numeric, stddev numeric, replications integer,
                 created_at timestamptz)
language sql stable security invoker
set search_path = ''
as $$ select * from private.labs_flagged_anomalies(page_size, before_time, before_id) $$;
comment on function public.labs_flagged_anomalies(integer, timestamptz, uuid) is
  'Super admins: replications more than 2 standard deviations from their template''s mean, newest first.';
grant execute on function labs_flagged_anomalies(integer, timestamptz, uuid) to authenticated, service_role;

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
