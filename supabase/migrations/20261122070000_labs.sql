-- Labs (the experiment community) and super-admin tools (issue 13).
--
-- 1. Submitted records: sponsors, opportunities, dream videos. Anyone signed in submits one;
--    public listings show approved ones. Contact fields and decline reasons live in `private`
--    tables no client role can read; super admins see them only through the review RPCs.
-- 2. Classroom accounts (set by super admins): no dream videos, classroom-safe templates only.
-- 3. Experiments: templates, clones and replication reports; convergence and anomalies are
--    computed here (private.labs_template_stats).
-- 4. Competitions scored from recorded activity events; step prompts.
-- 5. Sponsor outreach: capped messages (5 per 24 hours per sender per sponsor) whose bodies
--    only the sender and the recipient read; weekly digests claimed once per sponsor and week.
-- 6. Kit waitlist.
-- 7. Impersonation: an immutable audit trail, and every write made with an impersonation token
--    recorded with its impersonator.
-- 8. pg_cron job status for the admin health page.
--
-- Every admin operation checks private.is_trusted_caller() (a super admin by profiles.role, the
-- service role, or a direct database session) and raises 42501 (403) otherwise, before writing.

-- =========================================================================================
-- Shared helpers
-- =========================================================================================

create or replace function private.require_trusted_caller(action text) returns void
language plpgsql stable
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'only super admins may %', action using errcode = '42501';
  end if;
end
$$;
comment on function private.require_trusted_caller(text) is 'Raises 42501 unless the caller is a super admin, the service role or a direct session.';
grant execute on function private.require_trusted_caller(text) to authenticated, service_role;

create or replace function private.require_signed_in() returns uuid
language plpgsql stable
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
begin
  if me is null then
    raise exception 'sign in first' using errcode = '42501';
  end if;
  return me;
end
$$;
grant execute on function private.require_signed_in() to authenticated, service_role;

-- 22023 (400) naming the field when a required text is missing or too long.
create or replace function private.required_text(value text, field text, max_length integer) returns text
language plpgsql immutable
set search_path = ''
as $$
begin
  if value is null or btrim(value) = '' then
    raise exception '%: required', field using errcode = '22023';
  end if;
  if char_length(btrim(value)) > max_length then
    raise exception '%: at most % characters', field, max_length using errcode = '22023';
  end if;
  return btrim(value);
end
$$;
grant execute on function private.required_text(text, text, integer) to authenticated, service_role;

create or replace function private.valid_email(value text, field text) returns text
language plpgsql immutable
set search_path = ''
as $$
declare
  v text := lower(private.required_text(value, field, 320));
begin
  if v !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' then
    raise exception '%: not an e-mail address', field using errcode = '22023';
  end if;
  return v;
end
$$;
grant execute on function private.valid_email(text, text) to authenticated, service_role;

-- =========================================================================================
-- 1. Sponsors, opportunities, dream videos
-- =========================================================================================

create table public.labs_sponsors (
  id uuid primary key default gen_random_uuid(),
  applicant_id uuid not null references public.profiles (id) on delete cascade,
  name text not null check (char_length(name) between 1 and 200),
  tier text not null check (char_length(tier) between 1 and 50),
  status text not null default 'pending' check (status in ('pending', 'approved', 'declined')),
  applied_at timestamptz not null default now(),
  reviewed_at timestamptz
);
comment on table public.labs_sponsors is
  'Sponsor applications. Public listings show approved ones; the applicant sees their own status. '
  'Contact fields and the decline reason are in private.labs_sponsor_private.';
create index labs_sponsors_applicant on public.labs_sponsors (applicant_id, applied_at desc);
create index labs_sponsors_by_status on public.labs_sponsors (status, applied_at desc, id desc);

create table private.labs_sponsor_private (
  sponsor_id uuid primary key references public.labs_sponsors (id) on delete cascade,
  contact_email text not null,
  contact_name text not null,
  decline_reason text
);
comment on table private.labs_sponsor_private is
  'A sponsor''s contact fields and decline reason: super admins read them through the review RPCs only.';

create table public.labs_opportunities (
  id uuid primary key default gen_random_uuid(),
  submitter_id uuid not null references public.profiles (id) on delete cascade,
  kind text not null check (kind in ('internship', 'scholarship', 'fellowship', 'mentorship')),
  title text not null check (char_length(title) between 1 and 200),
  description text not null default '' check (char_length(description) <= 4000),
  url text check (char_length(url) <= 2048 and url ~* '^https?://'),
  status text not null default 'pending' check (status in ('pending', 'approved', 'declined')),
  applied_at timestamptz not null default now(),
  reviewed_at timestamptz
);
comment on table public.labs_opportunities is
  'Internships, scholarships, fellowships and mentorships submitted for the labs listing (approved ones are public).';
create index labs_opportunities_submitter on public.labs_opportunities (submitter_id, applied_at desc);
create index labs_opportunities_by_status on public.labs_opportunities (status, applied_at desc, id desc);

create table private.labs_opportunity_private (
  opportunity_id uuid primary key references public.labs_opportunities (id) on delete cascade,
  contact_email text not null,
  contact_name text not null,
  decline_reason text
);
comment on table private.labs_opportunity_private is 'An opportunity''s contact fields and decline reason (super admins, through RPCs).';

create table public.labs_dream_videos (
  id uuid primary key default gen_random_uuid(),
  submitter_id uuid not null references public.profiles (id) on delete cascade,
  title text not null check (char_length(title) between 1 and 200),
  video_url text not null check (char_length(video_url) <= 2048 and video_url ~* '^https://'),
  is_featured boolean not null default false,
  status text not null default 'pending' check (status in ('pending', 'approved', 'declined')),
  applied_at timestamptz not null default now(),
  reviewed_at timestamptz
);
comment on table public.labs_dream_videos is 'Dream videos (a submitted video URL); approved ones are public, featured ones first.';
create index labs_dream_videos_submitter on public.labs_dream_videos (submitter_id, applied_at desc);
create index labs_dream_videos_by_status on public.labs_dream_videos (status, applied_at desc, id desc);

create table private.labs_dream_video_private (
  video_id uuid primary key references public.labs_dream_videos (id) on delete cascade,
  decline_reason text
);
comment on table private.labs_dream_video_private is 'A dream video''s decline reason (super admins, through RPCs).';

-- Classroom accounts: a profile account type only super admins set.
create table public.labs_classroom_accounts (
  user_id uuid primary key references public.profiles (id) on delete cascade,
  set_by uuid references public.profiles (id) on delete set null,
  created_at timestamptz not null default now()
);
comment on table public.labs_classroom_accounts is
  'Profiles whose account type is classroom (no dream videos; classroom-safe templates only). Written by super admins.';
create index labs_classroom_accounts_set_by on public.labs_classroom_accounts (set_by);

create or replace function private.labs_is_classroom(uid uuid) returns boolean
language plpgsql stable security definer
set search_path = ''
as $$
begin
  return exists (select 1 from public.labs_classroom_accounts where user_id = uid);
end
$$;
comment on function private.labs_is_classroom(uuid) is 'Is the user a classroom account?';
grant execute on function private.labs_is_classroom(uuid) to authenticated, service_role;

alter table public.labs_sponsors enable row level security;
alter table public.labs_opportunities enable row level security;
alter table public.labs_dream_videos enable row level security;
alter table public.labs_classroom_accounts enable row level security;
revoke all on public.labs_sponsors, public.labs_opportunities, public.labs_dream_videos, public.labs_classroom_accounts
  from anon, authenticated, service_role;
grant select on public.labs_sponsors, public.labs_opportunities, public.labs_dream_videos to anon, authenticated, service_role;
grant select on public.labs_classroom_accounts to authenticated, service_role;

create policy "labs_sponsors: anyone reads approved" on public.labs_sponsors
  for select to anon using (status = 'approved');
create policy "labs_sponsors: approved, own, or super admin" on public.labs_sponsors
  for select to authenticated
  using (status = 'approved' or applicant_id = (select auth.uid()) or (select private.is_super_admin()));
create policy "labs_opportunities: anyone reads approved" on public.labs_opportunities
  for select to anon using (status = 'approved');
create policy "labs_opportunities: approved, own, or super admin" on public.labs_opportunities
  for select to authenticated
  using (status = 'approved' or submitter_id = (select auth.uid()) or (select private.is_super_admin()));
create policy "labs_dream_videos: anyone reads approved" on public.labs_dream_videos
  for select to anon using (status = 'approved');
create policy "labs_dream_videos: approved, own, or super admin" on public.labs_dream_videos
  for select to authenticated
  using (status = 'approved' or submitter_id = (select auth.uid()) or (select private.is_super_admin()));
create policy "labs_classroom_accounts: self or super admin" on public.labs_classroom_accounts
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- Submissions (as the signed-in caller; the contact fields go to the private table).
create or replace function private.labs_submit_sponsor(name text, tier text, contact_email text, contact_name text)
returns public.labs_sponsors
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  row public.labs_sponsors;
begin
  insert into public.labs_sponsors (applicant_id, name, tier)
  values (me, private.required_text(name, 'name', 200), private.required_text(tier, 'tier', 50))
  returning * into row;
  insert into private.labs_sponsor_private (sponsor_id, contact_email, contact_name)
  values (row.id, private.valid_email(contact_email, 'contact_email'), private.required_text(contact_name, 'contact_name', 200));
  return row;
end
$$;
grant execute on function private.labs_submit_sponsor(text, text, text, text) to authenticated;
create or replace function public.labs_submit_sponsor(name text, tier text, contact_email text, contact_name text)
returns public.labs_sponsors
language sql security invoker
set search_path = ''
as $$ select * from private.labs_submit_sponsor(name, tier, contact_email, contact_name) $$;
grant execute on function public.labs_submit_sponsor(text, text, text, text) to authenticated;

create or replace function private.labs_submit_opportunity(
  kind text, title text, description text, url text, contact_email text, contact_name text
) returns public.labs_opportunities
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  row public.labs_opportunities;
begin
  if kind is null or kind not in ('internship', 'scholarship', 'fellowship', 'mentorship') then
    raise exception 'kind: one of internship, scholarship, fellowship, mentorship' using errcode = '22023';
  end if;
  if url is not null and url !~* '^https?://' then
    raise exception 'url: must start with http:// or https://' using errcode = '22023';
  end if;
  insert into public.labs_opportunities (submitter_id, kind, title, description, url)
  values (me, kind, private.required_text(title, 'title', 200), coalesce(description, ''), url)
  returning * into row;
  insert into private.labs_opportunity_private (opportunity_id, contact_email, contact_name)
  values (row.id, private.valid_email(contact_email, 'contact_email'), private.required_text(contact_name, 'contact_name', 200));
  return row;
end
$$;
grant execute on function private.labs_submit_opportunity(text, text, text, text, text, text) to authenticated;
create or replace function public.labs_submit_opportunity(
  kind text, title text, description text, url text, contact_email text, contact_name text
) returns public.labs_opportunities
language sql security invoker
set search_path = ''
as $$ select * from private.labs_submit_opportunity(kind, title, description, url, contact_email, contact_name) $$;
grant execute on function public.labs_submit_opportunity(text, text, text, text, text, text) to authenticated;

create or replace function private.labs_submit_dream_video(title text, video_url text)
returns public.labs_dream_videos
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  row public.labs_dream_videos;
begin
  if private.labs_is_classroom(me) then
    raise exception 'classroom accounts cannot submit dream videos' using errcode = '42501';
  end if;
  if video_url is null or video_url !~* '^https://' or char_length(video_url) > 2048 then
    raise exception 'video_url: an https:// URL of at most 2048 characters' using errcode = '22023';
  end if;
  insert into public.labs_dream_videos (submitter_id, title, video_url)
  values (me, private.required_text(title, 'title', 200), video_url)
  returning * into row;
  insert into private.labs_dream_video_private (video_id) values (row.id);
  return row;
end
$$;
grant execute on function private.labs_submit_dream_video(text, text) to authenticated;
create or replace function public.labs_submit_dream_video(title text, video_url text)
returns public.labs_dream_videos
language sql security invoker
set search_path = ''
as $$ select * from private.labs_submit_dream_video(title, video_url) $$;
grant execute on function public.labs_submit_dream_video(text, text) to authenticated;

-- The review queue (super admins): pending records of one kind, newest first, with contact
-- fields. kind: sponsor | opportunity | video.
create or replace function private.labs_pending(
  kind text, page_size integer default 50, before_time timestamptz default null, before_id uuid default null
) returns table (id uuid, record jsonb, created_at timestamptz)
language plpgsql stable security definer
set search_path = ''
as $$
declare
  n integer := least(greatest(coalesce(page_size, 50), 1), 101);
begin
  perform private.require_trusted_caller('read the review queue');
  if kind = 'sponsor' then
    return query
      select s.id, to_jsonb(s) || jsonb_build_object('contact_email', p.contact_email, 'contact_name', p.contact_name), s.applied_at
        from public.labs_sponsors s join private.labs_sponsor_private p on p.sponsor_id = s.id
       where s.status = 'pending' and (before_time is null or (s.applied_at, s.id) < (before_time, before_id))
       order by s.applied_at desc, s.id desc limit n;
  elsif kind = 'opportunity' then
    return query
      select o.id, to_jsonb(o) || jsonb_build_object('contact_email', p.contact_email, 'contact_name', p.contact_name), o.applied_at
        from public.labs_opportunities o join private.labs_opportunity_private p on p.opportunity_id = o.id
       where o.status = 'pending' and (before_time is null or (o.applied_at, o.id) < (before_time, before_id))
       order by o.applied_at desc, o.id desc limit n;
  elsif kind = 'video' then
    return query
      select v.id, to_jsonb(v), v.applied_at
        from public.labs_dream_videos v
       where v.status = 'pending' and (before_time is null or (v.applied_at, v.id) < (before_time, before_id))
       order by v.applied_at desc, v.id desc limit n;
  else
    raise exception 'kind: one of sponsor, opportunity, video' using errcode = '22023';
  end if;
end
$$;
grant execute on function private.labs_pending(text, integer, timestamptz, uuid) to authenticated, service_role;
create or replace function public.labs_pending(
  kind text, page_size integer default 50, before_time timestamptz default null, before_id uuid default null
) returns table (id uuid, record jsonb, created_at timestamptz)
language sql stable security invoker
set search_path = ''
as $$ select * from private.labs_pending(kind, page_size, before_time, before_id) $$;
grant execute on function public.labs_pending(text, integer, timestamptz, uuid) to authenticated, service_role;

-- Approve or decline (super admins). Only a pending record moves (409 otherwise); unknown id
-- 404; a decline needs its reason (400), stored privately. Two admins at once: the row lock
-- makes the second see the first's decision (409).
create or replace function private.labs_review(kind text, record_id uuid, decision text, reason text default null)
returns table (id uuid, status text, reviewed_at timestamptz)
language plpgsql security definer
set search_path = ''
as $$
declare
  new_status text;
  current_status text;
  why text;
begin
  perform private.require_trusted_caller('review labs submissions');
  if decision = 'approve' then
    new_status := 'approved';
  elsif decision = 'decline' then
    new_status := 'declined';
    why := private.required_text(reason, 'reason', 2000);
  else
    raise exception 'decision: approve or decline' using errcode = '22023';
  end if;
  if kind = 'sponsor' then
    select s.status into current_status from public.labs_sponsors s where s.id = record_id for update;
  elsif kind = 'opportunity' then
    select o.status into current_status from public.labs_opportunities o where o.id = record_id for update;
  elsif kind = 'video' then
    select v.status into current_status from public.labs_dream_videos v where v.id = record_id for update;
  else
    raise exception 'kind: one of sponsor, opportunity, video' using errcode = '22023';
  end if;
  if current_status is null then
    raise exception 'no % %', kind, record_id using errcode = 'PT404';
  end if;
  if current_status <> 'pending' then
    raise exception 'this % is already %; only pending records can be reviewed', kind, current_status using errcode = 'PT409';
  end if;
  if kind = 'sponsor' then
    update public.labs_sponsors s set status = new_status, reviewed_at = now() where s.id = record_id;
    update private.labs_sponsor_private p set decline_reason = why where p.sponsor_id = record_id;
  elsif kind = 'opportunity' then
    update public.labs_opportunities o set status = new_status, reviewed_at = now() where o.id = record_id;
    update private.labs_opportunity_private p set decline_reason = why where p.opportunity_id = record_id;
  else
    update public.labs_dream_videos v set status = new_status, reviewed_at = now() where v.id = record_id;
    update private.labs_dream_video_private p set decline_reason = why where p.video_id = record_id;
  end if;
  return query select record_id, new_status, now();
end
$$;
grant execute on function private.labs_review(text, uuid, text, text) to authenticated, service_role;
create or replace function public.labs_review(kind text, record_id uuid, decision text, reason text default null)
returns table (id uuid, status text, reviewed_at timestamptz)
language sql security invoker
set search_path = ''
as $$ select * from private.labs_review(kind, record_id, decision, reason) $$;
grant execute on function public.labs_review(text, uuid, text, text) to authenticated, service_role;

-- Feature (or unfeature) an approved dream video on the public listing (super admins).
create or replace function private.labs_feature_video(video_id uuid, is_featured boolean) returns public.labs_dream_videos
language plpgsql security definer
set search_path = ''
as $$
declare
  v public.labs_dream_videos;
begin
  perform private.require_trusted_caller('feature dream videos');
  if is_featured is null then
    raise exception 'is_featured: required' using errcode = '22023';
  end if;
  select * into v from public.labs_dream_videos d where d.id = video_id for update;
  if v.id is null then
    raise exception 'no video %', video_id using errcode = 'PT404';
  end if;
  if v.status <> 'approved' then
    raise exception 'only approved videos can be featured (this one is %)', v.status using errcode = 'PT409';
  end if;
  update public.labs_dream_videos d set is_featured = labs_feature_video.is_featured where d.id = v.id returning * into v;
  return v;
end
$$;
grant execute on function private.labs_feature_video(uuid, boolean) to authenticated, service_role;
create or replace function public.labs_feature_video(video_id uuid, is_featured boolean) returns public.labs_dream_videos
language sql security invoker
set search_path = ''
as $$ select * from private.labs_feature_video(video_id, is_featured) $$;
grant execute on function public.labs_feature_video(uuid, boolean) to authenticated, service_role;

-- Account type (super admins): standard or classroom.
create or replace function private.labs_set_account_type(target_user_id uuid, account_type text) returns text
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('set account types');
  if account_type is null or account_type not in ('standard', 'classroom') then
    raise exception 'account_type: standard or classroom' using errcode = '22023';
  end if;
  if not exists (select 1 from public.profiles where id = target_user_id) then
    raise exception 'no user %', target_user_id using errcode = 'PT404';
  end if;
  if account_type = 'classroom' then
    insert into public.labs_classroom_accounts (user_id, set_by) values (target_user_id, (select auth.uid()))
    on conflict (user_id) do nothing;
  else
    delete from public.labs_classroom_accounts where user_id = target_user_id;
  end if;
  return account_type;
end
$$;
grant execute on function private.labs_set_account_type(uuid, text) to authenticated, service_role;
create or replace function public.labs_set_account_type(target_user_id uuid, account_type text) returns text
language sql security invoker
set search_path = ''
as $$ select private.labs_set_account_type(target_user_id, account_type) $$;
grant execute on function public.labs_set_account_type(uuid, text) to authenticated, service_role;

-- =========================================================================================
-- 3. Experiments: templates, clones, replications
-- =========================================================================================

create table public.labs_experiments (
  id uuid primary key default gen_random_uuid(),
  owner_id uuid not null default auth.uid() references public.profiles (id) on delete cascade,
  title text not null check (char_length(title) between 1 and 200),
  calculator text not null check (calculator in ('resonance', 'coil', 'impedance', 'electrolysis', 'pulsed_dc', 'plasma')),
  inputs jsonb not null default '{}'::jsonb check (jsonb_typeof(inputs) = 'object' and pg_column_size(inputs) <= 8192),
  is_template boolean not null default false,
  is_public boolean not null default false,
  safety_level text not null default 'adult_only' check (safety_level in ('adult_only', 'with_supervision', 'classroom_safe')),
  min_grade_band text check (min_grade_band in ('K-5', '6-8', '9-12')),
  predicted_values jsonb check (jsonb_typeof(predicted_values) = 'object' and pg_column_size(predicted_values) <= 16384),
  cloned_from uuid references public.labs_experiments (id) on delete set null,
  completed_at timestamptz,
  created_at timestamptz not null default now(),
  constraint labs_experiments_classroom_band check (safety_level <> 'classroom_safe' or min_grade_band is not null),
  constraint labs_experiments_clone_not_template check (not (is_template and cloned_from is not null))
);
comment on table public.labs_experiments is
  'Experiment templates (is_template) and the clones users run from them (cloned_from). Safety level, grade band '
  'and predicted values change only through super-admin RPCs.';
comment on column public.labs_experiments.predicted_values is
  'The golden spec: {calculator, optimal_inputs, calculator_outputs: {outputs: [{label, value, unit}]}}; '
  'the first output''s value is the prediction replications are measured against.';
create index labs_experiments_owner on public.labs_experiments (owner_id, created_at desc);
create index labs_experiments_cloned_from on public.labs_experiments (cloned_from);
create index labs_experiments_public_templates on public.labs_experiments (created_at desc, id desc)
  where is_template and is_public;
-- The step-prompt job: unfinished clones by owner.
create index labs_experiments_unfinished_clones on public.labs_experiments (owner_id)
  where cloned_from is not null and completed_at is null;

alter table public.labs_experiments enable row level security;
revoke all on public.labs_experiments from anon, authenticated, service_role;
grant select on public.labs_experiments to authenticated, service_role;
grant insert (title, calculator, inputs, is_template, is_public) on public.labs_experiments to authenticated;
grant update (title, inputs, is_public) on public.labs_experiments to authenticated;
grant delete on public.labs_experiments to authenticated;

create policy "labs_experiments: own, public templates, or super admin" on public.labs_experiments
  for select to authenticated
  using (
    owner_id = (select auth.uid())
    or (select private.is_super_admin())
    or (is_template and is_public
        and (safety_level = 'classroom_safe' or not (select private.labs_is_classroom((select auth.uid())))))
  );
comment on policy "labs_experiments: own, public templates, or super admin" on public.labs_experiments is
  'Classroom accounts see public templates only when classroom_safe (SPEC Other admin rules 3).';
create policy "labs_experiments: owners create" on public.labs_experiments
  for insert to authenticated
  with check (owner_id = (select auth.uid()));
create policy "labs_experiments: owners edit" on public.labs_experiments
  for update to authenticated
  using (owner_id = (select auth.uid()))
  with check (owner_id = (select auth.uid()));
create policy "labs_experiments: owners delete" on public.labs_experiments
  for delete to authenticated
  using (owner_id = (select auth.uid()));

-- What users do in labs, for competition scoring: one row per clone, completion, build and
-- replication outcome. Written only by the RPCs below.
create table public.labs_activity_events (
  id bigint generated always as identity primary key,
  user_id uuid not null references public.profiles (id) on delete cascade,
  kind text not null check (kind in ('clone', 'completion', 'replication_confirmed', 'replication_refuted', 'build')),
  experiment_id uuid references public.labs_experiments (id) on delete set null,
  created_at timestamptz not null default now()
);
comment on table public.labs_activity_events is
  'Labs activity that competitions score (scoring_config weights per kind). Users read their own.';
create index labs_activity_events_user on public.labs_activity_events (user_id, created_at);
create index labs_activity_events_experiment on public.labs_activity_events (experiment_id);
alter table public.labs_activity_events enable row level security;
revoke all on public.labs_activity_events from anon, authenticated, service_role;
grant select on public.labs_activity_events to authenticated, service_role;
create policy "labs_activity_events: own or super admin" on public.labs_activity_events
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

create table public.labs_replications (
  id uuid primary key default gen_random_uuid(),
  clone_id uuid not null references public.labs_experiments (id) on delete cascade,
  template_id uuid not null references public.labs_experiments (id) on delete cascade,
  user_id uuid not null references public.profiles (id) on delete cascade,
  measured_value double precision not null check (measured_value <> 'NaN' and measured_value not in ('Infinity', '-Infinity')),
  predicted_value double precision,
  confirmed boolean,
  created_at timestamptz not null default now()
);
comment on table public.labs_replications is
  'Replication results reported on clones. confirmed: within 5 % of the template''s prediction at report time '
  '(null without a prediction). Reporters read their own; template statistics come from private.labs_template_stats.';
create index labs_replications_clone on public.labs_replications (clone_id);
create index labs_replications_template on public.labs_replications (template_id, created_at);
create index labs_replications_user on public.labs_replications (user_id);
alter table public.labs_replications enable row level security;
revoke all on public.labs_replications from anon, authenticated, service_role;
grant select on public.labs_replications to authenticated, service_role;
create policy "labs_replications: own or super admin" on public.labs_replications
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- The prediction of a golden spec: its first output's value.
create or replace function private.labs_predicted_value(spec jsonb) returns double precision
language sql immutable
set search_path = ''
as $$
  select case when jsonb_typeof(spec -> 'calculator_outputs' -> 'outputs' -> 0 -> 'value') = 'number'
              then (spec -> 'calculator_outputs' -> 'outputs' -> 0 ->> 'value')::double precision end
$$;
grant execute on function private.labs_predicted_value(jsonb) to authenticated, service_role;

-- Convergence: robust after 50 independent confirmations (distinct users with a report within
-- 5 % of the prediction); a report more than 2 standard deviations from the mean of the
-- template's reports is an anomaly (sample standard deviation; none with fewer than 3 reports).
create or replace function private.labs_template_stats(template_ids uuid[])
returns table (template_id uuid, replications integer, independent_confirmations integer, mean double precision,
               stddev double precision, anomalies integer, robust boolean)
language sql stable security definer
set search_path = ''
as $$
  with moments as (
    select r.template_id, count(*)::integer as n, avg(r.measured_value) as mean, stddev_samp(r.measured_value) as sd,
           count(distinct r.user_id) filter (where r.confirmed)::integer as confirmations
      from public.labs_replications r
     where r.template_id = any (template_ids)
     group by r.template_id
  )
  select m.template_id, m.n, m.confirmations, m.mean, m.sd,
         (select count(*)::integer from public.labs_replications r
           where r.template_id = m.template_id and m.n >= 3 and abs(r.measured_value - m.mean) > 2 * m.sd),
         m.confirmations >= 50
    from moments m
$$;
comment on function private.labs_template_stats(uuid[]) is
  'Per template: replications, independent confirmations (distinct users within 5 %), mean, sample stddev, '
  'anomalies (> 2 stddev from the mean) and robust (>= 50 confirmations).';
grant execute on function private.labs_template_stats(uuid[]) to authenticated, service_role;

-- Each replication of a template with its anomaly flag (the template's page).
create or replace function private.labs_template_replications(template_id uuid)
returns table (id uuid, measured_value double precision, confirmed boolean, is_anomaly boolean, created_at timestamptz)
language sql stable security definer
set search_path = ''
as $$
  with m as (
    select count(*) as n, avg(measured_value) as mean, stddev_samp(measured_value) as sd
      from public.labs_replications where labs_replications.template_id = labs_template_replications.template_id
  )
  select r.id, r.measured_value, r.confirmed,
         coalesce(m.n >= 3 and abs(r.measured_value - m.mean) > 2 * m.sd, false), r.created_at
    from public.labs_replications r cross join m
   where r.template_id = labs_template_replications.template_id
   order by r.created_at desc, r.id desc
   limit 500
$$;
grant execute on function private.labs_template_replications(uuid) to authenticated, service_role;

-- Templates the caller may see (RLS), with their convergence.
create or replace function public.labs_template_list(
  page_size integer default 50, before_time timestamptz default null, before_id uuid default null
) returns table (id uuid, owner_id uuid, title text, calculator text, inputs jsonb, safety_level text,
                 min_grade_band text, is_public boolean, predicted_values jsonb, created_at timestamptz, convergence jsonb)
language sql stable security invoker
set search_path = ''
as $$
  with page as (
    select e.* from public.labs_experiments e
     where e.is_template and (e.is_public or e.owner_id = (select auth.uid()))
       and (before_time is null or (e.created_at, e.id) < (before_time, before_id))
     order by e.created_at desc, e.id desc
     limit least(greatest(coalesce(page_size, 50), 1), 101)
  )
  select p.id, p.owner_id, p.title, p.calculator, p.inputs, p.safety_level, p.min_grade_band, p.is_public,
         p.predicted_values, p.created_at,
         jsonb_build_object('replications', coalesce(s.replications, 0),
                            'independent_confirmations', coalesce(s.independent_confirmations, 0),
                            'mean', s.mean, 'stddev', s.stddev, 'anomalies', coalesce(s.anomalies, 0),
                            'robust', coalesce(s.robust, false))
    from page p
    left join private.labs_template_stats(array(select id from page)) s on s.template_id = p.id
   order by p.created_at desc, p.id desc
$$;
grant execute on function public.labs_template_list(integer, timestamptz, uuid) to authenticated, service_role;

-- One template the caller may see, with its convergence and replications (404 otherwise).
create or replace function public.labs_template_details(template_id uuid) returns jsonb
language plpgsql stable security invoker
set search_path = ''
as $$
declare
  t public.labs_experiments;
  stats record;
begin
  select * into t from public.labs_experiments e where e.id = template_id and e.is_template;
  if t.id is null then
    raise exception 'no template %', template_id using errcode = 'PT404';
  end if;
  select * into stats from private.labs_template_stats(array[t.id]);
  return to_jsonb(t) || jsonb_build_object(
    'convergence', jsonb_build_object('replications', coalesce(stats.replications, 0),
      'independent_confirmations', coalesce(stats.independent_confirmations, 0), 'mean', stats.mean,
      'stddev', stats.stddev, 'anomalies', coalesce(stats.anomalies, 0), 'robust', coalesce(stats.robust, false)),
    'replications', coalesce((select jsonb_agg(to_jsonb(r)) from private.labs_template_replications(t.id) r), '[]'::jsonb));
end
$$;
grant execute on function public.labs_template_details(uuid) to authenticated, service_role;

create or replace function private.labs_record_activity(uid uuid, kind text, experiment uuid) returns void
language sql security definer
set search_path = ''
as $$
  insert into public.labs_activity_events (user_id, kind, experiment_id) values (uid, kind, experiment)
$$;
revoke all on function private.labs_record_activity(uuid, text, uuid) from public;

-- Clone a template the caller may see; classroom accounts only classroom-safe ones.
create or replace function private.labs_clone_template(template_id uuid) returns public.labs_experiments
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  t public.labs_experiments;
  clone public.labs_experiments;
begin
  select * into t from public.labs_experiments e
   where e.id = template_id and e.is_template
     and (e.is_public or e.owner_id = me or private.is_super_admin());
  if t.id is null then
    raise exception 'no template %', template_id using errcode = 'PT404';
  end if;
  if t.safety_level <> 'classroom_safe' and private.labs_is_classroom(me) then
    raise exception 'classroom accounts can clone only classroom-safe templates' using errcode = '42501';
  end if;
  insert into public.labs_experiments (owner_id, title, calculator, inputs, cloned_from)
  values (me, t.title, t.calculator, t.inputs, t.id)
  returning * into clone;
  perform private.labs_record_activity(me, 'clone', clone.id);
  return clone;
end
$$;
grant execute on function private.labs_clone_template(uuid) to authenticated;
create or replace function public.labs_clone_template(template_id uuid) returns public.labs_experiments
language sql security invoker
set search_path = ''
as $$ select * from private.labs_clone_template(template_id) $$;
grant execute on function public.labs_clone_template(uuid) to authenticated;

-- Finish a clone (once): a completion, and a build when the kit was built.
create or replace function private.labs_complete_clone(clone_id uuid, built boolean default false)
returns public.labs_experiments
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  c public.labs_experiments;
begin
  update public.labs_experiments e set completed_at = now()
   where e.id = clone_id and e.owner_id = me and e.cloned_from is not null and e.completed_at is null
  returning * into c;
  if c.id is null then
    if not exists (select 1 from public.labs_experiments e where e.id = clone_id and e.owner_id = me and e.cloned_from is not null) then
      raise exception 'no clone % of yours', clone_id using errcode = 'PT404';
    end if;
    raise exception 'this clone is already completed' using errcode = 'PT409';
  end if;
  perform private.labs_record_activity(me, 'completion', c.id);
  if coalesce(built, false) then
    perform private.labs_record_activity(me, 'build', c.id);
  end if;
  return c;
end
$$;
grant execute on function private.labs_complete_clone(uuid, boolean) to authenticated;
create or replace function public.labs_complete_clone(clone_id uuid, built boolean default false)
returns public.labs_experiments
language sql security invoker
set search_path = ''
as $$ select * from private.labs_complete_clone(clone_id, built) $$;
grant execute on function public.labs_complete_clone(uuid, boolean) to authenticated;

-- Report a replication on one's own clone: confirmed when within 5 % of the template's
-- prediction (refuted otherwise; no outcome while the template has no prediction).
create or replace function private.labs_report_replication(clone_id uuid, measured_value double precision)
returns public.labs_replications
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  c public.labs_experiments;
  prediction double precision;
  row public.labs_replications;
begin
  if measured_value is null or measured_value = 'NaN' or measured_value in ('Infinity', '-Infinity') then
    raise exception 'measured_value: a finite number' using errcode = '22023';
  end if;
  select * into c from public.labs_experiments e where e.id = clone_id and e.owner_id = me and e.cloned_from is not null;
  if c.id is null then
    raise exception 'no clone % of yours', clone_id using errcode = 'PT404';
  end if;
  select private.labs_predicted_value(t.predicted_values) into prediction from public.labs_experiments t where t.id = c.cloned_from;
  insert into public.labs_replications (clone_id, template_id, user_id, measured_value, predicted_value, confirmed)
  values (c.id, c.cloned_from, me, measured_value, prediction,
          case when prediction is not null then abs(measured_value - prediction) <= 0.05 * abs(prediction) end)
  returning * into row;
  if row.confirmed is not null then
    perform private.labs_record_activity(me, case when row.confirmed then 'replication_confirmed' else 'replication_refuted' end, c.id);
  end if;
  return row;
end
$$;
grant execute on function private.labs_report_replication(uuid, double precision) to authenticated;
create or replace function public.labs_report_replication(clone_id uuid, measured_value double precision)
returns public.labs_replications
language sql security invoker
set search_path = ''
as $$ select * from private.labs_report_replication(clone_id, measured_value) $$;
grant execute on function public.labs_report_replication(uuid, double precision) to authenticated;

-- Super admins: promote a template to classroom_safe (band required), reset it to adult_only.
create or replace function private.labs_set_template_safety(template_id uuid, safety_level text, min_grade_band text default null)
returns public.labs_experiments
language plpgsql security definer
set search_path = ''
as $$
declare
  t public.labs_experiments;
begin
  perform private.require_trusted_caller('change a template''s safety level');
  if safety_level not in ('classroom_safe', 'adult_only') then
    raise exception 'safety_level: classroom_safe or adult_only' using errcode = '22023';
  end if;
  if safety_level = 'classroom_safe' and (min_grade_band is null or min_grade_band not in ('K-5', '6-8', '9-12')) then
    raise exception 'min_grade_band: one of K-5, 6-8, 9-12' using errcode = '22023';
  end if;
  select * into t from public.labs_experiments e where e.id = template_id for update;
  if t.id is null then
    raise exception 'no template %', template_id using errcode = 'PT404';
  end if;
  if not t.is_template then
    raise exception 'only templates have a safety level to change (this is a clone)' using errcode = 'PT409';
  end if;
  update public.labs_experiments e
     set safety_level = labs_set_template_safety.safety_level,
         min_grade_band = coalesce(labs_set_template_safety.min_grade_band, e.min_grade_band)
   where e.id = t.id
  returning * into t;
  return t;
end
$$;
grant execute on function private.labs_set_template_safety(uuid, text, text) to authenticated, service_role;
create or replace function public.labs_set_template_safety(template_id uuid, safety_level text, min_grade_band text default null)
returns public.labs_experiments
language sql security invoker
set search_path = ''
as $$ select * from private.labs_set_template_safety(template_id, safety_level, min_grade_band) $$;
grant execute on function public.labs_set_template_safety(uuid, text, text) to authenticated, service_role;

-- Super admins: store a golden spec as the template's predicted_values, after checking its shape.
create or replace function private.labs_set_golden_spec(template_id uuid, spec jsonb) returns public.labs_experiments
language plpgsql security definer
set search_path = ''
as $$
declare
  t public.labs_experiments;
  output jsonb;
  k text;
begin
  perform private.require_trusted_caller('store golden specs');
  if jsonb_typeof(spec) is distinct from 'object' or spec - array['calculator', 'optimal_inputs', 'calculator_outputs'] <> '{}'::jsonb then
    raise exception 'body: {calculator, optimal_inputs, calculator_outputs} only' using errcode = '22023';
  end if;
  if jsonb_typeof(spec -> 'optimal_inputs') is distinct from 'object' then
    raise exception 'optimal_inputs: an object of name to number' using errcode = '22023';
  end if;
  for k in select jsonb_object_keys(spec -> 'optimal_inputs') loop
    if jsonb_typeof(spec -> 'optimal_inputs' -> k) <> 'number' then
      raise exception 'optimal_inputs.%: a number', k using errcode = '22023';
    end if;
  end loop;
  if jsonb_typeof(spec -> 'calculator_outputs' -> 'outputs') is distinct from 'array'
     or jsonb_array_length(spec -> 'calculator_outputs' -> 'outputs') = 0 then
    raise exception 'calculator_outputs.outputs: a non-empty array of {label, value, unit}' using errcode = '22023';
  end if;
  for output in select jsonb_array_elements(spec -> 'calculator_outputs' -> 'outputs') loop
    if jsonb_typeof(output -> 'label') is distinct from 'string' or jsonb_typeof(output -> 'value') is distinct from 'number'
       or jsonb_typeof(output -> 'unit') is distinct from 'string' then
      raise exception 'calculator_outputs.outputs: each needs label (string), value (number), unit (string)' using errcode = '22023';
    end if;
  end loop;
  select * into t from public.labs_experiments e where e.id = template_id for update;
  if t.id is null then
    raise exception 'no template %', template_id using errcode = 'PT404';
  end if;
  if not t.is_template then
    raise exception 'golden specs belong to templates (this is a clone)' using errcode = 'PT409';
  end if;
  if spec ->> 'calculator' is distinct from t.calculator then
    raise exception 'calculator: the template uses %', t.calculator using errcode = '22023';
  end if;
  update public.labs_experiments e set predicted_values = spec where e.id = t.id returning * into t;
  return t;
end
$$;
grant execute on function private.labs_set_golden_spec(uuid, jsonb) to authenticated, service_role;
create or replace function public.labs_set_golden_spec(template_id uuid, spec jsonb) returns public.labs_experiments
language sql security invoker
set search_path = ''
as $$ select * from private.labs_set_golden_spec(template_id, spec) $$;
grant execute on function public.labs_set_golden_spec(uuid, jsonb) to authenticated, service_role;

-- =========================================================================================
-- 4. Competitions and step prompts
-- =========================================================================================

create table public.labs_competitions (
  id uuid primary key default gen_random_uuid(),
  slug text not null unique check (slug ~ '^[a-z0-9][a-z0-9-]{0,79}$'),
  title text not null check (char_length(title) between 1 and 200),
  is_active boolean not null default true,
  entry_open boolean not null default true,
  starts_at timestamptz not null default now(),
  ends_at timestamptz,
  last_scored_at timestamptz,
  scoring_config jsonb not null
    default '{"clone": 1, "completion": 5, "replication_confirmed": 25, "replication_refuted": 5, "build": 10}'::jsonb
    check (jsonb_typeof(scoring_config) = 'object'
           and scoring_config - array['clone', 'completion', 'replication_confirmed', 'replication_refuted', 'build'] = '{}'::jsonb),
  created_at timestamptz not null default now(),
  constraint labs_competitions_window check (ends_at is null or ends_at > starts_at)
);
comment on table public.labs_competitions is
  'Labs competitions: participants score their activity events between starts_at and ends_at by scoring_config''s weights.';
alter table public.labs_competitions enable row level security;
revoke all on public.labs_competitions from anon, authenticated, service_role;
grant select on public.labs_competitions to anon, authenticated, service_role;
create policy "labs_competitions: anyone reads active ones" on public.labs_competitions
  for select to anon using (is_active);
create policy "labs_competitions: active ones, or all for super admins" on public.labs_competitions
  for select to authenticated using (is_active or (select private.is_super_admin()));

create table public.labs_competition_participants (
  competition_id uuid not null references public.labs_competitions (id) on delete cascade,
  user_id uuid not null references public.profiles (id) on delete cascade,
  joined_at timestamptz not null default now(),
  score integer not null default 0,
  primary key (competition_id, user_id)
);
comment on table public.labs_competition_participants is
  'Who entered which competition, with the score of the last recompute. Participants read their own rows; '
  'the leaderboard RPC shows the ranking.';
create index labs_competition_participants_user on public.labs_competition_participants (user_id);
create index labs_competition_participants_ranking on public.labs_competition_participants (competition_id, score desc, joined_at, user_id);
alter table public.labs_competition_participants enable row level security;
revoke all on public.labs_competition_participants from anon, authenticated, service_role;
grant select on public.labs_competition_participants to authenticated, service_role;
create policy "labs_competition_participants: own or super admin" on public.labs_competition_participants
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

create or replace function private.labs_create_competition(
  slug text, title text, starts_at timestamptz default null, ends_at timestamptz default null, scoring_config jsonb default null
) returns public.labs_competitions
language plpgsql security definer
set search_path = ''
as $$
declare
  c public.labs_competitions;
  k text;
begin
  perform private.require_trusted_caller('create competitions');
  if slug is null or slug !~ '^[a-z0-9][a-z0-9-]{0,79}$' then
    raise exception 'slug: lower-case letters, digits and dashes (at most 80)' using errcode = '22023';
  end if;
  if scoring_config is not null then
    if jsonb_typeof(scoring_config) <> 'object' then
      raise exception 'scoring_config: an object of weights' using errcode = '22023';
    end if;
    for k in select jsonb_object_keys(scoring_config) loop
      if k not in ('clone', 'completion', 'replication_confirmed', 'replication_refuted', 'build') then
        raise exception 'scoring_config.%: not a scored activity', k using errcode = '22023';
      end if;
      if jsonb_typeof(scoring_config -> k) <> 'number' or (scoring_config ->> k)::numeric <> trunc((scoring_config ->> k)::numeric) then
        raise exception 'scoring_config.%: an integer weight', k using errcode = '22023';
      end if;
    end loop;
  end if;
  insert into public.labs_competitions (slug, title, starts_at, ends_at, scoring_config)
  values (slug, private.required_text(title, 'title', 200), coalesce(starts_at, now()), ends_at,
          '{"clone": 1, "completion": 5, "replication_confirmed": 25, "replication_refuted": 5, "build": 10}'::jsonb
            || coalesce(scoring_config, '{}'::jsonb))
  returning * into c;
  return c;
exception when unique_violation then
  raise exception 'slug: a competition % already exists', slug using errcode = '23505';
end
$$;
grant execute on function private.labs_create_competition(text, text, timestamptz, timestamptz, jsonb) to authenticated, service_role;
create or replace function public.labs_create_competition(
  slug text, title text, starts_at timestamptz default null, ends_at timestamptz default null, scoring_config jsonb default null
) returns public.labs_competitions
language sql security invoker
set search_path = ''
as $$ select * from private.labs_create_competition(slug, title, starts_at, ends_at, scoring_config) $$;
grant execute on function public.labs_create_competition(text, text, timestamptz, timestamptz, jsonb) to authenticated, service_role;

create or replace function private.labs_update_competition(slug text, is_active boolean default null, entry_open boolean default null)
returns public.labs_competitions
language plpgsql security definer
set search_path = ''
as $$
declare
  c public.labs_competitions;
begin
  perform private.require_trusted_caller('change competitions');
  update public.labs_competitions k
     set is_active = coalesce(labs_update_competition.is_active, k.is_active),
         entry_open = coalesce(labs_update_competition.entry_open, k.entry_open)
   where k.slug = labs_update_competition.slug
  returning * into c;
  if c.id is null then
    raise exception 'no competition %', slug using errcode = 'PT404';
  end if;
  return c;
end
$$;
grant execute on function private.labs_update_competition(text, boolean, boolean) to authenticated, service_role;
create or replace function public.labs_update_competition(slug text, is_active boolean default null, entry_open boolean default null)
returns public.labs_competitions
language sql security invoker
set search_path = ''
as $$ select * from private.labs_update_competition(slug, is_active, entry_open) $$;
grant execute on function public.labs_update_competition(text, boolean, boolean) to authenticated, service_role;

create or replace function private.labs_join_competition(slug text) returns public.labs_competition_participants
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  c public.labs_competitions;
  p public.labs_competition_participants;
begin
  select * into c from public.labs_competitions k where k.slug = labs_join_competition.slug and k.is_active;
  if c.id is null then
    raise exception 'no competition %', slug using errcode = 'PT404';
  end if;
  if not c.entry_open then
    raise exception 'entries to % are closed', slug using errcode = 'PT409';
  end if;
  insert into public.labs_competition_participants (competition_id, user_id) values (c.id, me)
  on conflict (competition_id, user_id) do nothing;
  select * into p from public.labs_competition_participants x where x.competition_id = c.id and x.user_id = me;
  return p;
end
$$;
grant execute on function private.labs_join_competition(text) to authenticated;
create or replace function public.labs_join_competition(slug text) returns public.labs_competition_participants
language sql security invoker
set search_path = ''
as $$ select * from private.labs_join_competition(slug) $$;
grant execute on function public.labs_join_competition(text) to authenticated;

-- Rescore every active, open competition in one statement per run: each participant's score
-- is the weighted count of their activity events inside the competition's window. Concurrent
-- runs queue on the competition rows (same result either way).
create or replace function private.labs_recompute_competitions()
returns table (slug text, participants integer, scored_at timestamptz)
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('recompute competitions');
  perform 1 from public.labs_competitions c where c.is_active and c.entry_open order by c.id for update;
  with scores as (
    select p.competition_id, p.user_id,
           coalesce(sum(coalesce((c.scoring_config ->> e.kind)::integer, 0)), 0)::integer as score
      from public.labs_competition_participants p
      join public.labs_competitions c on c.id = p.competition_id and c.is_active and c.entry_open
      left join public.labs_activity_events e
        on e.user_id = p.user_id and e.created_at >= c.starts_at and (c.ends_at is null or e.created_at < c.ends_at)
     group by p.competition_id, p.user_id
  )
  update public.labs_competition_participants p set score = s.score
    from scores s
   where p.competition_id = s.competition_id and p.user_id = s.user_id and p.score <> s.score;
  return query
    with stamped as (
      update public.labs_competitions c set last_scored_at = now()
       where c.is_active and c.entry_open
      returning c.id, c.slug, c.last_scored_at
    )
    select s.slug, (select count(*)::integer from public.labs_competition_participants p where p.competition_id = s.id), s.last_scored_at
      from stamped s order by s.slug;
end
$$;
comment on function private.labs_recompute_competitions() is
  'The recompute-competitions job: rescores every active, open competition and sets last_scored_at.';
grant execute on function private.labs_recompute_competitions() to authenticated, service_role;
create or replace function public.labs_recompute_competitions()
returns table (slug text, participants integer, scored_at timestamptz)
language sql security invoker
set search_path = ''
as $$ select * from private.labs_recompute_competitions() $$;
grant execute on function public.labs_recompute_competitions() to authenticated, service_role;

-- The leaderboard (default 50, SPEC Limits): rank, participant and score as last computed.
create or replace function private.labs_leaderboard(slug text, page_size integer default 50)
returns table (rank bigint, user_id uuid, full_name text, score integer, joined_at timestamptz)
language plpgsql stable security definer
set search_path = ''
as $$
declare
  c public.labs_competitions;
begin
  select * into c from public.labs_competitions k
   where k.slug = labs_leaderboard.slug and (k.is_active or private.is_super_admin());
  if c.id is null then
    raise exception 'no competition %', slug using errcode = 'PT404';
  end if;
  return query
    select rank() over (order by p.score desc), p.user_id, pr.full_name, p.score, p.joined_at
      from public.labs_competition_participants p join public.profiles pr on pr.id = p.user_id
     where p.competition_id = c.id
     order by p.score desc, p.joined_at, p.user_id
     limit least(greatest(coalesce(page_size, 50), 1), 100);
end
$$;
grant execute on function private.labs_leaderboard(text, integer) to authenticated, service_role;
create or replace function public.labs_leaderboard(slug text, page_size integer default 50)
returns table (rank bigint, user_id uuid, full_name text, score integer, joined_at timestamptz)
language sql stable security invoker
set search_path = ''
as $$ select * from private.labs_leaderboard(slug, page_size) $$;
grant execute on function public.labs_leaderboard(text, integer) to authenticated, service_role;

-- Step prompts: one row per user and day a prompt went out (the claim, so side-by-side runs
-- never prompt twice).
create table private.labs_step_prompts (
  user_id uuid not null references public.profiles (id) on delete cascade,
  prompted_on date not null,
  prompted_at timestamptz not null default now(),
  primary key (user_id, prompted_on)
);
comment on table private.labs_step_prompts is 'Step prompts sent (at most one per user per day).';
create index labs_step_prompts_latest on private.labs_step_prompts (user_id, prompted_at desc);

-- Users with an unfinished clone and no prompt in the last 3 days get one notification
-- (labs.step_prompt naming their oldest unfinished clone). A bounded batch per run; one
-- user's failure is reported in errors and does not stop the others.
create or replace function private.labs_process_step_prompts(batch_size integer default 1000) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  r record;
  total integer := 0;
  prompted integer := 0;
  skipped integer := 0;
  failed integer := 0;
  errors text[] := '{}'::text[];
  remaining integer;
begin
  perform private.require_trusted_caller('run the step-prompt job');
  raise log 'labs step prompts: start';
  for r in
    select distinct on (e.owner_id) e.owner_id, e.id, e.title
      from public.labs_experiments e
     where e.cloned_from is not null and e.completed_at is null
       and not exists (select 1 from private.labs_step_prompts s
                        where s.user_id = e.owner_id and s.prompted_at > now() - interval '3 days')
     order by e.owner_id, e.created_at
     limit least(greatest(coalesce(batch_size, 1000), 1), 10000)
  loop
    total := total + 1;
    begin
      insert into private.labs_step_prompts (user_id, prompted_on) values (r.owner_id, (now() at time zone 'utc')::date)
      on conflict do nothing;
      if found then
        perform private.notify(r.owner_id, 'labs.step_prompt', jsonb_build_object('clone_id', r.id, 'title', r.title));
        prompted := prompted + 1;
      else
        skipped := skipped + 1;
      end if;
    exception when others then
      failed := failed + 1;
      errors := errors || format('%s: %s', r.owner_id, sqlerrm);
    end;
  end loop;
  select count(distinct e.owner_id)::integer into remaining
    from public.labs_experiments e
   where e.cloned_from is not null and e.completed_at is null
     and not exists (select 1 from private.labs_step_prompts s
                      where s.user_id = e.owner_id and s.prompted_at > now() - interval '3 days');
  raise log 'labs step prompts: % prompted, % skipped, % failed, % remaining', prompted, skipped, failed, remaining;
  return jsonb_build_object('total', total, 'prompted', prompted, 'skipped', skipped, 'failed', failed,
                            'errors', to_jsonb(errors), 'remaining', remaining);
end
$$;
grant execute on function private.labs_process_step_prompts(integer) to authenticated, service_role;
create or replace function public.labs_process_step_prompts(batch_size integer default 1000) returns jsonb
language sql security invoker
set search_path = ''
as $$ select private.labs_process_step_prompts(batch_size) $$;
grant execute on function public.labs_process_step_prompts(integer) to authenticated, service_role;

-- =========================================================================================
-- 5. Sponsor outreach
-- =========================================================================================

create table public.labs_sponsor_messages (
  id uuid primary key default gen_random_uuid(),
  sponsor_id uuid not null references public.labs_sponsors (id) on delete cascade,
  sender_id uuid not null references public.profiles (id) on delete cascade,
  recipient_id uuid not null references public.profiles (id) on delete cascade,
  body text not null check (char_length(body) between 1 and 4000),
  created_at timestamptz not null default now()
);
comment on table public.labs_sponsor_messages is
  'Messages relayed to approved sponsors (recipient: the sponsor''s applicant). Only the sender and the recipient '
  'read them: no policy lets super admins (SPEC Other admin rules 1). Written by private.labs_send_sponsor_message.';
-- The cap (per sender and sponsor, last 24 hours) and the FK on sender_id.
create index labs_sponsor_messages_cap on public.labs_sponsor_messages (sender_id, sponsor_id, created_at);
create index labs_sponsor_messages_inbox on public.labs_sponsor_messages (recipient_id, created_at desc);
create index labs_sponsor_messages_digest on public.labs_sponsor_messages (sponsor_id, created_at);
alter table public.labs_sponsor_messages enable row level security;
revoke all on public.labs_sponsor_messages from anon, authenticated, service_role;
grant select on public.labs_sponsor_messages to authenticated;
create policy "labs_sponsor_messages: sender and recipient only" on public.labs_sponsor_messages
  for select to authenticated
  using (sender_id = (select auth.uid()) or recipient_id = (select auth.uid()));

-- At most 5 messages per 24 hours per sender per sponsor: a transaction-scoped advisory lock
-- on (sender, sponsor) makes the count-then-insert safe when requests race.
create or replace function private.labs_send_sponsor_message(sponsor_id uuid, body text) returns public.labs_sponsor_messages
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  recipient uuid;
  sent integer;
  row public.labs_sponsor_messages;
  text_body text := private.required_text(body, 'body', 4000);
begin
  select s.applicant_id into recipient from public.labs_sponsors s where s.id = sponsor_id and s.status = 'approved';
  if recipient is null then
    raise exception 'no approved sponsor %', sponsor_id using errcode = 'PT404';
  end if;
  perform pg_advisory_xact_lock(hashtextextended('labs_outreach:' || me::text || ':' || sponsor_id::text, 0));
  select count(*) into sent from public.labs_sponsor_messages m
   where m.sender_id = me and m.sponsor_id = labs_send_sponsor_message.sponsor_id and m.created_at > now() - interval '24 hours';
  if sent >= 5 then
    raise exception 'at most 5 messages per 24 hours to one sponsor; try again later' using errcode = 'PT429';
  end if;
  insert into public.labs_sponsor_messages (sponsor_id, sender_id, recipient_id, body)
  values (sponsor_id, me, recipient, text_body)
  returning * into row;
  return row;
end
$$;
grant execute on function private.labs_send_sponsor_message(uuid, text) to authenticated;
create or replace function public.labs_send_sponsor_message(sponsor_id uuid, body text) returns public.labs_sponsor_messages
language sql security invoker
set search_path = ''
as $$ select * from private.labs_send_sponsor_message(sponsor_id, body) $$;
grant execute on function public.labs_send_sponsor_message(uuid, text) to authenticated;

-- Weekly digests: one row per sponsor and week (the Monday starting the week the digest is sent
-- in; it covers the 7 days before). 'sending' is a claim; 'sent' is final. A claim older than
-- 15 minutes (a run that died) may be taken again.
create table private.labs_outreach_digests (
  sponsor_id uuid not null references public.labs_sponsors (id) on delete cascade,
  week_start date not null,
  status text not null default 'sending' check (status in ('sending', 'sent')),
  claimed_at timestamptz not null default now(),
  sent_at timestamptz,
  email_id text,
  messages integer not null,
  primary key (sponsor_id, week_start)
);
comment on table private.labs_outreach_digests is 'Sponsor outreach digests, once per sponsor and week.';

create or replace function private.labs_claim_outreach_digests(batch_size integer default 50, skip_sponsors uuid[] default '{}')
returns table (sponsor_id uuid, week_start date, sponsor_name text, contact_email text, contact_name text, messages jsonb)
language plpgsql security definer
set search_path = ''
as $$
declare
  this_week date := date_trunc('week', now() at time zone 'utc')::date;
begin
  perform private.require_trusted_caller('send outreach digests');
  return query
    with due as (
      select s.id, s.name, p.contact_email, p.contact_name
        from public.labs_sponsors s
        join private.labs_sponsor_private p on p.sponsor_id = s.id
       where s.status = 'approved'
         and s.id <> all (coalesce(skip_sponsors, '{}'))
         and exists (select 1 from public.labs_sponsor_messages m
                      where m.sponsor_id = s.id
                        and m.created_at >= (this_week - 7)::timestamp at time zone 'utc'
                        and m.created_at < this_week::timestamp at time zone 'utc')
         and not exists (select 1 from private.labs_outreach_digests d
                          where d.sponsor_id = s.id and d.week_start = this_week
                            and (d.status = 'sent' or d.claimed_at > now() - interval '15 minutes'))
       order by s.id
       limit least(greatest(coalesce(batch_size, 50), 1), 500)
    ),
    claimed as (
      insert into private.labs_outreach_digests as d (sponsor_id, week_start, messages)
      select due.id, this_week, 0 from due
      on conflict on constraint labs_outreach_digests_pkey do update set claimed_at = now()
        where d.status = 'sending' and d.claimed_at <= now() - interval '15 minutes'
      returning d.sponsor_id
    )
    select due.id, this_week, due.name, due.contact_email, due.contact_name,
           (select jsonb_agg(jsonb_build_object('body', m.body, 'sent_at', m.created_at) order by m.created_at)
              from public.labs_sponsor_messages m
             where m.sponsor_id = due.id
               and m.created_at >= (this_week - 7)::timestamp at time zone 'utc'
               and m.created_at < this_week::timestamp at time zone 'utc')
      from due join claimed on claimed.sponsor_id = due.id;
end
$$;
comment on function private.labs_claim_outreach_digests(integer, uuid[]) is
  'Claims this week''s digest of up to batch_size sponsors (last week''s messages); each claimed once per week. '
  'skip_sponsors: those whose send failed earlier in the same run (released for the next run, not retried at once).';
grant execute on function private.labs_claim_outreach_digests(integer, uuid[]) to service_role;
create or replace function public.labs_claim_outreach_digests(batch_size integer default 50, skip_sponsors uuid[] default '{}')
returns table (sponsor_id uuid, week_start date, sponsor_name text, contact_email text, contact_name text, messages jsonb)
language sql security invoker
set search_path = ''
as $$ select * from private.labs_claim_outreach_digests(batch_size, skip_sponsors) $$;
grant execute on function public.labs_claim_outreach_digests(integer, uuid[]) to service_role;

-- After the send: 'sent' with the provider's id, or the claim is released for the next run.
create or replace function private.labs_finish_outreach_digest(sponsor_id uuid, week_start date, email_id text, message_count integer)
returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('send outreach digests');
  if email_id is null then
    delete from private.labs_outreach_digests d
     where d.sponsor_id = labs_finish_outreach_digest.sponsor_id and d.week_start = labs_finish_outreach_digest.week_start
       and d.status = 'sending';
  else
    update private.labs_outreach_digests d
       set status = 'sent', sent_at = now(), email_id = labs_finish_outreach_digest.email_id, messages = coalesce(message_count, 0)
     where d.sponsor_id = labs_finish_outreach_digest.sponsor_id and d.week_start = labs_finish_outreach_digest.week_start;
  end if;
end
$$;
grant execute on function private.labs_finish_outreach_digest(uuid, date, text, integer) to service_role;
create or replace function public.labs_finish_outreach_digest(sponsor_id uuid, week_start date, email_id text, message_count integer)
returns void
language sql security invoker
set search_path = ''
as $$ select private.labs_finish_outreach_digest(sponsor_id, week_start, email_id, message_count) $$;
grant execute on function public.labs_finish_outreach_digest(uuid, date, text, integer) to service_role;

-- =========================================================================================
-- 6. Kit waitlist
-- =========================================================================================

create table public.labs_kit_waitlist (
  id uuid primary key default gen_random_uuid(),
  email text not null unique check (char_length(email) <= 320 and email = lower(email) and email ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$'),
  user_id uuid references public.profiles (id) on delete set null,
  created_at timestamptz not null default now()
);
comment on table public.labs_kit_waitlist is
  'Kit waitlist signups (one per address). Anyone may add one; only super admins read the list.';
create index labs_kit_waitlist_user on public.labs_kit_waitlist (user_id);
create index labs_kit_waitlist_created on public.labs_kit_waitlist (created_at desc, id desc);
alter table public.labs_kit_waitlist enable row level security;
revoke all on public.labs_kit_waitlist from anon, authenticated, service_role;
grant insert (email, user_id) on public.labs_kit_waitlist to anon, authenticated;
grant select on public.labs_kit_waitlist to authenticated, service_role;
create policy "labs_kit_waitlist: anyone signs up (anonymously)" on public.labs_kit_waitlist
  for insert to anon with check (user_id is null);
create policy "labs_kit_waitlist: signed-in users sign up as themselves" on public.labs_kit_waitlist
  for insert to authenticated with check (user_id is null or user_id = (select auth.uid()));
create policy "labs_kit_waitlist: super admins read" on public.labs_kit_waitlist
  for select to authenticated using ((select private.is_super_admin()));

-- Signing up is an insert as the caller (anonymous or signed in) under the policies above,
-- ON CONFLICT DO NOTHING: an address already on the list changes nothing, and the answer does
-- not say which (no probing who signed up).

-- The gate (SPEC Other admin rules 2): more than 200 signups within 30 days of launch.
create or replace function private.labs_kit_waitlist_gate(launch_date date)
returns table (total integer, within_launch_window integer, gate_met boolean)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('read the kit waitlist');
  return query
    select count(*)::integer,
           case when launch_date is null then null else
             (count(*) filter (where w.created_at >= launch_date::timestamp at time zone 'utc'
                                 and w.created_at < (launch_date + 30)::timestamp at time zone 'utc'))::integer end,
           case when launch_date is null then null else
             count(*) filter (where w.created_at >= launch_date::timestamp at time zone 'utc'
                                and w.created_at < (launch_date + 30)::timestamp at time zone 'utc') > 200 end
      from public.labs_kit_waitlist w;
end
$$;
grant execute on function private.labs_kit_waitlist_gate(date) to authenticated, service_role;
create or replace function public.labs_kit_waitlist_gate(launch_date date)
returns table (total integer, within_launch_window integer, gate_met boolean)
language sql stable security invoker
set search_path = ''
as $$ select * from private.labs_kit_waitlist_gate(launch_date) $$;
grant execute on function public.labs_kit_waitlist_gate(date) to authenticated, service_role;

-- =========================================================================================
-- 7. Impersonation
-- =========================================================================================

-- Plain uuids, no foreign keys: an audit row outlives the accounts it names and never changes.
create table public.impersonation_audit (
  id bigint generated always as identity primary key,
  session_id uuid not null,
  event text not null check (event in ('start', 'stop')),
  admin_id uuid not null,
  target_id uuid not null,
  reason text not null check (char_length(btrim(reason)) between 1 and 1000),
  expires_at timestamptz,
  created_at timestamptz not null default now(),
  unique (session_id, event)
);
comment on table public.impersonation_audit is
  'Impersonation sessions: a start row (admin, target, mandatory reason, expiry) and a stop row. Super admins read; '
  'nobody updates or deletes (a trigger refuses it, whoever asks).';
create index impersonation_audit_newest on public.impersonation_audit (created_at desc, id desc);

create table public.impersonation_writes (
  id bigint generated always as identity primary key,
  session_id uuid not null,
  admin_id uuid not null,
  target_id uuid not null,
  table_name text not null,
  operation text not null,
  row_id text,
  created_at timestamptz not null default now()
);
comment on table public.impersonation_writes is
  'Every row written with an impersonation token, attributed to its impersonator (the token''s act claim). '
  'Super admins read; immutable.';
create index impersonation_writes_session on public.impersonation_writes (session_id, created_at);

alter table public.impersonation_audit enable row level security;
alter table public.impersonation_writes enable row level security;
revoke all on public.impersonation_audit, public.impersonation_writes from anon, authenticated, service_role;
grant select on public.impersonation_audit, public.impersonation_writes to authenticated, service_role;
create policy "impersonation_audit: super admins read" on public.impersonation_audit
  for select to authenticated using ((select private.is_super_admin()));
create policy "impersonation_writes: super admins read" on public.impersonation_writes
  for select to authenticated using ((select private.is_super_admin()));

create or replace function private.refuse_audit_change() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  raise exception '% rows are never changed or deleted', tg_table_name using errcode = '42501';
end
$$;
create trigger impersonation_audit_immutable before update or delete on public.impersonation_audit
  for each row execute function private.refuse_audit_change();
create trigger impersonation_audit_no_truncate before truncate on public.impersonation_audit
  for each statement execute function private.refuse_audit_change();
create trigger impersonation_writes_immutable before update or delete on public.impersonation_writes
  for each row execute function private.refuse_audit_change();
create trigger impersonation_writes_no_truncate before truncate on public.impersonation_writes
  for each statement execute function private.refuse_audit_change();

-- Starts a session (super admins only, by profiles.role): never another super admin, never an
-- inactive user; the reason is mandatory. The edge function signs the token for the session.
create or replace function private.start_impersonation(target_user_id uuid, reason text, lifetime_seconds integer default 900)
returns table (session_id uuid, target_id uuid, target_email text, expires_at timestamptz)
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  target public.profiles;
  why text := private.required_text(reason, 'reason', 1000);
  session uuid := gen_random_uuid();
  until timestamptz := now() + make_interval(secs => least(greatest(coalesce(lifetime_seconds, 900), 60), 900));
begin
  if me is null or not private.is_super_admin() then
    raise exception 'only super admins may impersonate' using errcode = '42501';
  end if;
  if nullif(current_setting('request.jwt.claims', true), '')::jsonb ? 'act' then
    raise exception 'an impersonation session cannot start another' using errcode = '42501';
  end if;
  select * into target from public.profiles p where p.id = target_user_id;
  if target.id is null then
    raise exception 'no user %', target_user_id using errcode = 'PT404';
  end if;
  if target.role = 'super_admin' then
    raise exception 'super admins cannot be impersonated' using errcode = '42501';
  end if;
  if not target.is_active then
    raise exception 'inactive users cannot be impersonated' using errcode = 'PT409';
  end if;
  insert into public.impersonation_audit (session_id, event, admin_id, target_id, reason, expires_at)
  values (session, 'start', me, target.id, why, until);
  return query select session, target.id, (select u.email::text from auth.users u where u.id = target.id), until;
end
$$;
grant execute on function private.start_impersonation(uuid, text, integer) to authenticated;
create or replace function public.start_impersonation(target_user_id uuid, reason text, lifetime_seconds integer default 900)
returns table (session_id uuid, target_id uuid, target_email text, expires_at timestamptz)
language sql security invoker
set search_path = ''
as $$ select * from private.start_impersonation(target_user_id, reason, lifetime_seconds) $$;
grant execute on function public.start_impersonation(uuid, text, integer) to authenticated;

-- The session an API request acts in, from its token's claims (null when not impersonating).
create or replace function private.impersonation_claims() returns jsonb
language sql stable
set search_path = ''
as $$
  select case when c ? 'act' and c ? 'impersonation_session' then c end
    from (select nullif(current_setting('request.jwt.claims', true), '')::jsonb as c) x
$$;
grant execute on function private.impersonation_claims() to authenticated, service_role;

-- Ends a session: the impersonation token itself (its session), or a super admin naming the
-- session. Returns false when it had already ended.
create or replace function private.stop_impersonation(session_id uuid default null) returns boolean
language plpgsql security definer
set search_path = ''
as $$
declare
  claims jsonb := private.impersonation_claims();
  session uuid := coalesce(session_id, (claims ->> 'impersonation_session')::uuid);
  started public.impersonation_audit;
begin
  if session is null then
    raise exception 'session_id: required (or call with the impersonation token)' using errcode = '22023';
  end if;
  select * into started from public.impersonation_audit a where a.session_id = session and a.event = 'start';
  if started.id is null then
    raise exception 'no impersonation session %', session using errcode = 'PT404';
  end if;
  if not ((claims ->> 'impersonation_session')::uuid is not distinct from session or private.is_super_admin()) then
    raise exception 'only the session''s token or a super admin may end it' using errcode = '42501';
  end if;
  insert into public.impersonation_audit (session_id, event, admin_id, target_id, reason)
  values (session, 'stop', started.admin_id, started.target_id, started.reason)
  on conflict on constraint impersonation_audit_session_id_event_key do nothing;
  return found;
end
$$;
grant execute on function private.stop_impersonation(uuid) to authenticated;
create or replace function public.stop_impersonation(session_id uuid default null) returns boolean
language sql security invoker
set search_path = ''
as $$ select private.stop_impersonation(session_id) $$;
grant execute on function public.stop_impersonation(uuid) to authenticated;

-- On every table clients write: a write under an impersonation token is recorded with its
-- impersonator, and refused once the session has ended (stopped or expired), so stopping
-- takes effect before the token's own expiry.
create or replace function private.record_impersonated_write() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  raw text := current_setting('request.jwt.claims', true);
  claims jsonb;
  session uuid;
  row_id text;
begin
  -- The common case costs one string search.
  if raw is null or strpos(raw, '"impersonation_session"') = 0 then
    return null;
  end if;
  claims := private.impersonation_claims();
  if claims is null then
    return null;
  end if;
  session := (claims ->> 'impersonation_session')::uuid;
  if not exists (select 1 from public.impersonation_audit a
                  where a.session_id = session and a.event = 'start' and a.expires_at > now())
     or exists (select 1 from public.impersonation_audit a where a.session_id = session and a.event = 'stop') then
    raise exception 'this impersonation session has ended' using errcode = '42501';
  end if;
  row_id := case when tg_op = 'DELETE' then to_jsonb(old) ->> 'id' else to_jsonb(new) ->> 'id' end;
  insert into public.impersonation_writes (session_id, admin_id, target_id, table_name, operation, row_id)
  values (session, (claims -> 'act' ->> 'sub')::uuid, (claims ->> 'sub')::uuid, tg_table_schema || '.' || tg_table_name, tg_op, row_id);
  return null;
end
$$;
comment on function private.record_impersonated_write() is
  'AFTER trigger on client-writable tables: attributes writes made with an impersonation token to the impersonator.';

-- Attached to every table in public that a client role may insert, update or delete (as of
-- this migration; a later table adds the trigger in its own migration).
do $$
declare
  t record;
begin
  for t in
    select c.oid::regclass as tbl
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind = 'r'
       and c.relname not in ('impersonation_audit', 'impersonation_writes')
       and (has_table_privilege('authenticated', c.oid, 'insert') or has_table_privilege('authenticated', c.oid, 'update')
            or has_table_privilege('authenticated', c.oid, 'delete')
            or has_any_column_privilege('authenticated', c.oid, 'insert')
            or has_any_column_privilege('authenticated', c.oid, 'update'))
  loop
    execute format('create trigger zz_record_impersonated_write after insert or update or delete on %s '
                   'for each row execute function private.record_impersonated_write()', t.tbl);
  end loop;
end
$$;

-- =========================================================================================
-- 8. pg_cron jobs for the admin health page
-- =========================================================================================

create or replace function private.cron_job_status()
returns table (job_name text, schedule text, active boolean, last_status text, last_started_at timestamptz,
               last_finished_at timestamptz, last_message text)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('read the cron job status');
  return query
    select j.jobname::text, j.schedule::text, j.active, d.status::text, d.start_time, d.end_time, left(d.return_message, 500)
      from cron.job j
      left join lateral (select r.status, r.start_time, r.end_time, r.return_message
                           from cron.job_run_details r where r.jobid = j.jobid
                          order by r.start_time desc nulls last limit 1) d on true
     order by j.jobname;
end
$$;
grant execute on function private.cron_job_status() to authenticated, service_role;
create or replace function public.cron_job_status()
returns table (job_name text, schedule text, active boolean, last_status text, last_started_at timestamptz,
               last_finished_at timestamptz, last_message text)
language sql stable security invoker
set search_path = ''
as $$ select * from private.cron_job_status() $$;
grant execute on function public.cron_job_status() to authenticated, service_role;

-- The step-prompt job (SPEC: 0 3 * * *) is pure SQL, so pg_cron calls its function directly
-- (its endpoint runs the same function). The recompute and the digest are frontend-hosted
-- routes (SPEC): their host schedules them.
select cron.schedule('labs-process-step-prompts', '0 3 * * *', 'select private.labs_process_step_prompts()');
