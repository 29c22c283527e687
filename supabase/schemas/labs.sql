-- =============================================================================================
-- Labs
-- =============================================================================================
-- The experiment community and its super-admin tools:
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
--
-- Impersonation is in impersonation.sql, the pg_cron job status in admin.sql.
--
-- Every admin operation checks private.is_trusted_caller() (a super admin by profiles.role, the
-- service role, or a direct database session) and raises 42501 (403) otherwise, before writing.

-- ---------------------------------------------------------------------------------------------
-- Shared helpers
-- ---------------------------------------------------------------------------------------------

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

-- The caller's id; 42501 when nobody is signed in.
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
grant execute on function private.required_text(text,text,integer) to authenticated, service_role;

-- 22023 naming the field unless the value looks like an e-mail address; returns it in lower case.
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
grant execute on function private.valid_email(text,text) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Sponsors, opportunities, dream videos
-- ---------------------------------------------------------------------------------------------

create table public.labs_sponsors (
  id uuid primary key default gen_random_uuid(),
  name text not null check (char_length(name) between 1 and 200),
  tier text not null check (char_length(tier) between 1 and 50),
  status text not null default 'pending' check (status in ('pending', 'approved', 'declined')),
  applied_at timestamptz not null default now(),
  reviewed_at timestamptz
);
alter table public.labs_sponsors enable row level security;
comment on table public.labs_sponsors is
  'Sponsor applications. Public listings show approved ones; the applicant sees their own (labs_my_submissions). '
  'The applicant, contact fields and decline reason are in private.labs_sponsor_private.';
revoke all on public.labs_sponsors from anon, authenticated, service_role;
grant select on public.labs_sponsors to anon, authenticated, service_role;

create index labs_sponsors_by_status on public.labs_sponsors (status, applied_at desc, id desc);

create table private.labs_sponsor_private (
  sponsor_id uuid primary key references public.labs_sponsors (id) on delete cascade,
  contact_email text not null,
  contact_name text not null,
  decline_reason text,
  applicant_id uuid not null references public.profiles (id) on delete cascade
);
comment on table private.labs_sponsor_private is
  'A sponsor''s applicant, contact fields and decline reason: super admins read them through the review RPCs only.';

create table public.labs_opportunities (
  id uuid primary key default gen_random_uuid(),
  kind text not null check (kind in ('internship', 'scholarship', 'fellowship', 'mentorship')),
  title text not null check (char_length(title) between 1 and 200),
  description text not null default '' check (char_length(description) <= 4000),
  url text check (char_length(url) <= 2048 and url ~* '^https?://'),
  status text not null default 'pending' check (status in ('pending', 'approved', 'declined')),
  applied_at timestamptz not null default now(),
  reviewed_at timestamptz
);
alter table public.labs_opportunities enable row level security;
comment on table public.labs_opportunities is
  'Internships, scholarships, fellowships and mentorships submitted for the labs listing (approved ones are public). '
  'The submitter and contact fields are in private.labs_opportunity_private.';
revoke all on public.labs_opportunities from anon, authenticated, service_role;
grant select on public.labs_opportunities to anon, authenticated, service_role;

create index labs_opportunities_by_status on public.labs_opportunities (status, applied_at desc, id desc);

create table private.labs_opportunity_private (
  opportunity_id uuid primary key references public.labs_opportunities (id) on delete cascade,
  contact_email text not null,
  contact_name text not null,
  decline_reason text,
  submitter_id uuid not null references public.profiles (id) on delete cascade
);
comment on table private.labs_opportunity_private is
  'An opportunity''s submitter, contact fields and decline reason (super admins, through RPCs).';

create table public.labs_dream_videos (
  id uuid primary key default gen_random_uuid(),
  title text not null check (char_length(title) between 1 and 200),
  video_url text not null check (char_length(video_url) <= 2048 and video_url ~* '^https://'),
  is_featured boolean not null default false,
  status text not null default 'pending' check (status in ('pending', 'approved', 'declined')),
  applied_at timestamptz not null default now(),
  reviewed_at timestamptz
);
alter table public.labs_dream_videos enable row level security;
comment on table public.labs_dream_videos is
  'Dream videos (a submitted video URL); approved ones are public, featured ones first. The submitter is in '
  'private.labs_dream_video_private.';
revoke all on public.labs_dream_videos from anon, authenticated, service_role;
grant select on public.labs_dream_videos to anon, authenticated, service_role;

create index labs_dream_videos_by_status on public.labs_dream_videos (status, applied_at desc, id desc);

create table private.labs_dream_video_private (
  video_id uuid primary key references public.labs_dream_videos (id) on delete cascade,
  decline_reason text,
  submitter_id uuid not null references public.profiles (id) on delete cascade
);
comment on table private.labs_dream_video_private is 'A dream video''s submitter and decline reason (super admins, through RPCs).';

-- Classroom accounts: a profile account type only super admins set.
create table public.labs_classroom_accounts (
  user_id uuid primary key references public.profiles (id) on delete cascade,
  set_by uuid references public.profiles (id) on delete set null,
  created_at timestamptz not null default now()
);
alter table public.labs_classroom_accounts enable row level security;
comment on table public.labs_classroom_accounts is
  'Profiles whose account type is classroom (no dream videos; classroom-safe templates only). Written by super admins.';
revoke all on public.labs_classroom_accounts from anon, authenticated, service_role;
grant select on public.labs_classroom_accounts to authenticated, service_role;

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

create policy "labs_sponsors: anyone reads approved" on public.labs_sponsors
  for select to anon using (status = 'approved');

create policy "labs_opportunities: anyone reads approved" on public.labs_opportunities
  for select to anon using (status = 'approved');

create policy "labs_dream_videos: anyone reads approved" on public.labs_dream_videos
  for select to anon using (status = 'approved');

create policy "labs_classroom_accounts: self or super admin" on public.labs_classroom_accounts
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- A sponsor application; the applicant and contact fields go to the private row.
create or replace function private.labs_submit_sponsor(name text, tier text, contact_email text, contact_name text)
returns public.labs_sponsors
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  row public.labs_sponsors;
begin
  insert into public.labs_sponsors (name, tier)
  values (private.required_text(name, 'name', 200), private.required_text(tier, 'tier', 50))
  returning * into row;
  insert into private.labs_sponsor_private (sponsor_id, applicant_id, contact_email, contact_name)
  values (row.id, me, private.valid_email(contact_email, 'contact_email'), private.required_text(contact_name, 'contact_name', 200));
  return row;
end
$$;
grant execute on function private.labs_submit_sponsor(text,text,text,text) to authenticated;

create or replace function public.labs_submit_sponsor(name text, tier text, contact_email text, contact_name text)
returns public.labs_sponsors
language sql security invoker
set search_path = ''
as $$ select * from private.labs_submit_sponsor(name, tier, contact_email, contact_name) $$;
grant execute on function labs_submit_sponsor(text,text,text,text) to authenticated, service_role;

-- An opportunity for the listing; the submitter and contact fields go to the private row.
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
  perform private.check_max_length('url', url, 2048);
  perform private.check_max_length('description', description, 4000);
  insert into public.labs_opportunities (kind, title, description, url)
  values (kind, private.required_text(title, 'title', 200), coalesce(description, ''), url)
  returning * into row;
  insert into private.labs_opportunity_private (opportunity_id, submitter_id, contact_email, contact_name)
  values (row.id, me, private.valid_email(contact_email, 'contact_email'), private.required_text(contact_name, 'contact_name', 200));
  return row;
end
$$;
grant execute on function private.labs_submit_opportunity(text,text,text,text,text,text) to authenticated;

create or replace function public.labs_submit_opportunity(
  kind text, title text, description text, url text, contact_email text, contact_name text
) returns public.labs_opportunities
language sql security invoker
set search_path = ''
as $$ select * from private.labs_submit_opportunity(kind, title, description, url, contact_email, contact_name) $$;
grant execute on function labs_submit_opportunity(text,text,text,text,text,text) to authenticated, service_role;

-- A dream video; the submitter goes to the private row.
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
  insert into public.labs_dream_videos (title, video_url)
  values (private.required_text(title, 'title', 200), video_url)
  returning * into row;
  insert into private.labs_dream_video_private (video_id, submitter_id) values (row.id, me);
  return row;
end
$$;
grant execute on function private.labs_submit_dream_video(text,text) to authenticated;

create or replace function public.labs_submit_dream_video(title text, video_url text)
returns public.labs_dream_videos
language sql security invoker
set search_path = ''
as $$ select * from private.labs_submit_dream_video(title, video_url) $$;
grant execute on function labs_submit_dream_video(text,text) to authenticated, service_role;

-- The review queue of one kind (super admins): pending records with their submitter, newest
-- first.
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
      select s.id, to_jsonb(s) || jsonb_build_object('applicant_id', p.applicant_id, 'contact_email', p.contact_email,
                                                     'contact_name', p.contact_name), s.applied_at
        from public.labs_sponsors s join private.labs_sponsor_private p on p.sponsor_id = s.id
       where s.status = 'pending' and (before_time is null or (s.applied_at, s.id) < (before_time, before_id))
       order by s.applied_at desc, s.id desc limit n;
  elsif kind = 'opportunity' then
    return query
      select o.id, to_jsonb(o) || jsonb_build_object('submitter_id', p.submitter_id, 'contact_email', p.contact_email,
                                                     'contact_name', p.contact_name), o.applied_at
        from public.labs_opportunities o join private.labs_opportunity_private p on p.opportunity_id = o.id
       where o.status = 'pending' and (before_time is null or (o.applied_at, o.id) < (before_time, before_id))
       order by o.applied_at desc, o.id desc limit n;
  elsif kind = 'video' then
    return query
      select v.id, to_jsonb(v) || jsonb_build_object('submitter_id', p.submitter_id), v.applied_at
        from public.labs_dream_videos v join private.labs_dream_video_private p on p.video_id = v.id
       where v.status = 'pending' and (before_time is null or (v.applied_at, v.id) < (before_time, before_id))
       order by v.applied_at desc, v.id desc limit n;
  else
    raise exception 'kind: one of sponsor, opportunity, video' using errcode = '22023';
  end if;
end
$$;
grant execute on function private.labs_pending(text,integer,timestamp with time zone,uuid) to authenticated, service_role;

create or replace function public.labs_pending(
  kind text, page_size integer default 50, before_time timestamptz default null, before_id uuid default null
) returns table (id uuid, record jsonb, created_at timestamptz)
language sql stable security invoker
set search_path = ''
as $$ select * from private.labs_pending(kind, page_size, before_time, before_id) $$;
grant execute on function labs_pending(text,integer,timestamp with time zone,uuid) to authenticated, service_role;

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
grant execute on function private.labs_review(text,uuid,text,text) to authenticated, service_role;

create or replace function public.labs_review(kind text, record_id uuid, decision text, reason text default null)
returns table (id uuid, status text, reviewed_at timestamptz)
language sql security invoker
set search_path = ''
as $$ select * from private.labs_review(kind, record_id, decision, reason) $$;
grant execute on function labs_review(text,uuid,text,text) to authenticated, service_role;

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
grant execute on function private.labs_feature_video(uuid,boolean) to authenticated, service_role;

create or replace function public.labs_feature_video(video_id uuid, is_featured boolean) returns public.labs_dream_videos
language sql security invoker
set search_path = ''
as $$ select * from private.labs_feature_video(video_id, is_featured) $$;
grant execute on function labs_feature_video(uuid,boolean) to authenticated, service_role;

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
grant execute on function private.labs_set_account_type(uuid,text) to authenticated, service_role;

create or replace function public.labs_set_account_type(target_user_id uuid, account_type text) returns text
language sql security invoker
set search_path = ''
as $$ select private.labs_set_account_type(target_user_id, account_type) $$;
grant execute on function labs_set_account_type(uuid,text) to authenticated, service_role;

-- Who submitted what is in the private rows: the caller's own records come from there.
create index labs_sponsor_private_applicant on private.labs_sponsor_private (applicant_id);

create index labs_opportunity_private_submitter on private.labs_opportunity_private (submitter_id);

create index labs_dream_video_private_submitter on private.labs_dream_video_private (submitter_id);

-- The caller's own records, for the policies (computed once per statement).
create or replace function private.labs_my_sponsor_ids() returns setof uuid
language sql stable security definer
set search_path = ''
as $$ select p.sponsor_id from private.labs_sponsor_private p where p.applicant_id = (select auth.uid()) $$;
comment on function private.labs_my_sponsor_ids() is 'Ids of the sponsors the caller applied for.';
grant execute on function private.labs_my_sponsor_ids() to authenticated, service_role;

create or replace function private.labs_my_opportunity_ids() returns setof uuid
language sql stable security definer
set search_path = ''
as $$ select p.opportunity_id from private.labs_opportunity_private p where p.submitter_id = (select auth.uid()) $$;
comment on function private.labs_my_opportunity_ids() is 'Ids of the opportunities the caller submitted.';
grant execute on function private.labs_my_opportunity_ids() to authenticated, service_role;

create or replace function private.labs_my_video_ids() returns setof uuid
language sql stable security definer
set search_path = ''
as $$ select p.video_id from private.labs_dream_video_private p where p.submitter_id = (select auth.uid()) $$;
comment on function private.labs_my_video_ids() is 'Ids of the dream videos the caller submitted.';
grant execute on function private.labs_my_video_ids() to authenticated, service_role;

create policy "labs_sponsors: approved, own, or super admin" on public.labs_sponsors
  for select to authenticated
  using (status = 'approved' or id in (select private.labs_my_sponsor_ids()) or (select private.is_super_admin()));
comment on policy "labs_sponsors: approved, own, or super admin" on public.labs_sponsors is
  'Own: the applicant is in private.labs_sponsor_private, so no reader learns who applied for an approved sponsor.';

create policy "labs_opportunities: approved, own, or super admin" on public.labs_opportunities
  for select to authenticated
  using (status = 'approved' or id in (select private.labs_my_opportunity_ids()) or (select private.is_super_admin()));

create policy "labs_dream_videos: approved, own, or super admin" on public.labs_dream_videos
  for select to authenticated
  using (status = 'approved' or id in (select private.labs_my_video_ids()) or (select private.is_super_admin()));

-- A profile's deletion removes its private rows (foreign key); these take the public records
-- with them (the public tables name no user to cascade from).
create or replace function private.labs_forget_sponsor() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  delete from public.labs_sponsors where id = old.sponsor_id;
  return null;
end
$$;
comment on function private.labs_forget_sponsor() is 'After a sponsor''s private row goes (its applicant deleted), the sponsor goes too.';

create trigger labs_forget_sponsor after delete on private.labs_sponsor_private
  for each row execute function private.labs_forget_sponsor();

create or replace function private.labs_forget_opportunity() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  delete from public.labs_opportunities where id = old.opportunity_id;
  return null;
end
$$;
comment on function private.labs_forget_opportunity() is 'After an opportunity''s private row goes, the opportunity goes too.';

create trigger labs_forget_opportunity after delete on private.labs_opportunity_private
  for each row execute function private.labs_forget_opportunity();

create or replace function private.labs_forget_video() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  delete from public.labs_dream_videos where id = old.video_id;
  return null;
end
$$;
comment on function private.labs_forget_video() is 'After a dream video''s private row goes, the video goes too.';

create trigger labs_forget_video after delete on private.labs_dream_video_private
  for each row execute function private.labs_forget_video();

-- The caller's own submissions of each kind, newest first (at most 100 each), whatever their
-- status; never a decline reason. Invoker: RLS shows the caller their own records.
create or replace function public.labs_my_submissions() returns jsonb
language sql stable security invoker
set search_path = ''
as $$
  select jsonb_build_object(
    'sponsors', coalesce((select jsonb_agg(to_jsonb(s) order by s.applied_at desc, s.id desc)
                            from (select * from public.labs_sponsors x where x.id in (select private.labs_my_sponsor_ids())
                                   order by x.applied_at desc, x.id desc limit 100) s), '[]'::jsonb),
    'opportunities', coalesce((select jsonb_agg(to_jsonb(o) order by o.applied_at desc, o.id desc)
                                 from (select * from public.labs_opportunities x where x.id in (select private.labs_my_opportunity_ids())
                                        order by x.applied_at desc, x.id desc limit 100) o), '[]'::jsonb),
    'videos', coalesce((select jsonb_agg(to_jsonb(v) order by v.applied_at desc, v.id desc)
                          from (select * from public.labs_dream_videos x where x.id in (select private.labs_my_video_ids())
                                 order by x.applied_at desc, x.id desc limit 100) v), '[]'::jsonb))
$$;
comment on function public.labs_my_submissions() is
  'The caller''s sponsors, opportunities and dream videos with their status (no decline reason), newest first, 100 each.';
grant execute on function labs_my_submissions() to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Experiments: templates, clones, replications
-- ---------------------------------------------------------------------------------------------

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
alter table public.labs_experiments enable row level security;
comment on table public.labs_experiments is
  'Experiment templates (is_template) and the clones users run from them (cloned_from). Safety level, grade band '
  'and predicted values change only through super-admin RPCs.';
comment on column public.labs_experiments.predicted_values is
  'The golden spec: {calculator, optimal_inputs, calculator_outputs: {outputs: [{label, value, unit}]}}; '
  'the first output''s value is the prediction replications are measured against.';
revoke all on public.labs_experiments from anon, authenticated, service_role;
grant select, delete on public.labs_experiments to authenticated;
grant select on public.labs_experiments to service_role;
grant insert (title, calculator, inputs, is_template, is_public), update (title, inputs, is_public)
  on public.labs_experiments to authenticated;

create index labs_experiments_owner on public.labs_experiments (owner_id, created_at desc);

create index labs_experiments_cloned_from on public.labs_experiments (cloned_from);

create index labs_experiments_public_templates on public.labs_experiments (created_at desc, id desc)
  where is_template and is_public;

-- The step-prompt job: unfinished clones by owner.
create index labs_experiments_unfinished_clones on public.labs_experiments (owner_id)
  where cloned_from is not null and completed_at is null;

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
  created_at timestamptz not null default now(),
  template_id uuid references public.labs_experiments (id) on delete set null,
  replication_id uuid -- references public.labs_replications, below
);
alter table public.labs_activity_events enable row level security;
comment on table public.labs_activity_events is
  'Labs activity that competitions score (scoring_config weights per kind): on curated (golden-spec) public templates of '
  'others only, at most one clone, completion, build and replication per user and template. Users read their own.';
comment on column public.labs_activity_events.template_id is 'The curated public template the activity was on.';
comment on column public.labs_activity_events.replication_id is
  'The replication a replication_* event scored. Only private.labs_remove_replication (super admins) takes the event '
  'out with it.';
revoke all on public.labs_activity_events from anon, authenticated, service_role;
grant select on public.labs_activity_events to authenticated, service_role;

create index labs_activity_events_user on public.labs_activity_events (user_id, created_at);

create index labs_activity_events_experiment on public.labs_activity_events (experiment_id);

create index labs_activity_events_template on public.labs_activity_events (template_id);

create index labs_activity_events_replication on public.labs_activity_events (replication_id);

-- At most one scored event per user, template and kind (confirmed and refuted are one kind:
-- the first replication a user reports on a template decides which).
create unique index labs_activity_events_once_per_template on public.labs_activity_events
  (user_id, template_id, (case when kind in ('replication_confirmed', 'replication_refuted') then 'replication' else kind end));

create policy "labs_activity_events: own or super admin" on public.labs_activity_events
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

create table public.labs_replications (
  id uuid primary key default gen_random_uuid(),
  clone_id uuid references public.labs_experiments (id) on delete set null,
  template_id uuid not null references public.labs_experiments (id) on delete cascade,
  user_id uuid not null references public.profiles (id) on delete cascade,
  measured_value double precision not null check (measured_value <> 'NaN' and measured_value not in ('Infinity', '-Infinity')),
  predicted_value double precision,
  confirmed boolean,
  created_at timestamptz not null default now()
);
alter table public.labs_replications enable row level security;
alter table public.labs_activity_events
  add foreign key (replication_id) references public.labs_replications (id) on delete set null;
comment on table public.labs_replications is
  'Replication results reported on clones. confirmed: within 5 % of the template''s prediction at report time '
  '(null without a prediction). Reporters read their own; template statistics come from private.labs_template_stats.';
comment on column public.labs_replications.clone_id is 'The clone it was reported on; null once its owner deleted the clone.';
revoke all on public.labs_replications from anon, authenticated, service_role;
grant select on public.labs_replications to authenticated, service_role;

create index labs_replications_clone on public.labs_replications (clone_id);

create index labs_replications_template on public.labs_replications (template_id, created_at);

create index labs_replications_user on public.labs_replications (user_id);

create policy "labs_replications: own or super admin" on public.labs_replications
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- A template's predicted value from its golden spec; a stored prediction out of bounds is no
-- prediction rather than an error.
create or replace function private.labs_predicted_value(spec jsonb) returns double precision
language sql immutable
set search_path = ''
as $$
  select case when private.labs_plausible_number(spec -> 'calculator_outputs' -> 'outputs' -> 0 -> 'value')
              then (spec -> 'calculator_outputs' -> 'outputs' -> 0 ->> 'value')::double precision end
$$;
grant execute on function private.labs_predicted_value(jsonb) to authenticated, service_role;

create or replace function private.labs_template_stats(template_ids uuid[])
returns table (template_id uuid, replications integer, independent_confirmations integer, mean numeric,
               stddev numeric, anomalies integer, robust boolean)
language sql stable security definer
set search_path = ''
as $$
  with moments as (
    select r.template_id, count(*)::integer as n, avg(r.measured_value::numeric) as mean,
           stddev_samp(r.measured_value::numeric) as sd,
           count(distinct r.user_id) filter (where r.confirmed)::integer as confirmations
      from public.labs_replications r
     where r.template_id = any (template_ids)
     group by r.template_id
  )
  select m.template_id, m.n, m.confirmations, trim_scale(m.mean), trim_scale(m.sd),
         (select count(*)::integer from public.labs_replications r
           where r.template_id = m.template_id and m.n >= 3 and abs(r.measured_value::numeric - m.mean) > 2 * m.sd),
         m.confirmations >= 50
    from moments m
$$;
comment on function private.labs_template_stats(uuid[]) is
  'Per template: replications, independent confirmations (distinct users within 5 %), mean, sample stddev, '
  'anomalies (> 2 stddev from the mean) and robust (>= 50 confirmations). Numeric arithmetic: no stored value overflows it.';
grant execute on function private.labs_template_stats(uuid[]) to authenticated, service_role;

-- A template's replications with their anomaly flags (numeric arithmetic, no overflow).
create or replace function private.labs_template_replications(template_id uuid)
returns table (id uuid, measured_value double precision, confirmed boolean, is_anomaly boolean, created_at timestamptz)
language sql stable security definer
set search_path = ''
as $$
  with m as (
    select count(*) as n, avg(measured_value::numeric) as mean, stddev_samp(measured_value::numeric) as sd
      from public.labs_replications where labs_replications.template_id = labs_template_replications.template_id
  )
  select r.id, r.measured_value, r.confirmed,
         coalesce(m.n >= 3 and abs(r.measured_value::numeric - m.mean) > 2 * m.sd, false), r.created_at
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
grant execute on function labs_template_list(integer,timestamp with time zone,uuid) to authenticated, service_role;

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
grant execute on function labs_template_details(uuid) to authenticated, service_role;

-- Records a scoring activity event: only on others' curated public templates, at most one per
-- user, template and kind.
create or replace function private.labs_record_activity(uid uuid, kind text, experiment uuid, template uuid, replication uuid default null)
returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  if kind = 'clone' then
    if not exists (select 1 from public.labs_experiments t
                    where t.id = template and t.is_public and t.owner_id <> uid and t.predicted_values is not null) then
      return;
    end if;
  elsif not exists (select 1 from public.labs_activity_events e where e.user_id = uid and e.template_id = template and e.kind = 'clone') then
    return;
  end if;
  insert into public.labs_activity_events (user_id, kind, experiment_id, template_id, replication_id)
  values (uid, kind, experiment, template, replication)
  on conflict do nothing;
end
$$;

-- Clones a public template for the caller, recording the clone event with its template.
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
  perform private.labs_record_activity(me, 'clone', clone.id, t.id);
  return clone;
end
$$;
grant execute on function private.labs_clone_template(uuid) to authenticated;

create or replace function public.labs_clone_template(template_id uuid) returns public.labs_experiments
language sql security invoker
set search_path = ''
as $$ select * from private.labs_clone_template(template_id) $$;
grant execute on function labs_clone_template(uuid) to authenticated, service_role;

-- Marks a clone completed (and built). A build is what the
-- completing user says (nothing in the system can verify a kit); it scores only with a scored
-- completion's template, once per user and template.
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
  perform private.labs_record_activity(me, 'completion', c.id, c.cloned_from);
  if coalesce(built, false) then
    perform private.labs_record_activity(me, 'build', c.id, c.cloned_from);
  end if;
  return c;
end
$$;
grant execute on function private.labs_complete_clone(uuid,boolean) to authenticated;

create or replace function public.labs_complete_clone(clone_id uuid, built boolean default false)
returns public.labs_experiments
language sql security invoker
set search_path = ''
as $$ select * from private.labs_complete_clone(clone_id, built) $$;
grant execute on function labs_complete_clone(uuid,boolean) to authenticated, service_role;

-- Reports a measured value on one's own clone; confirmed when within 5 % of the template's
-- prediction.
create or replace function private.labs_report_replication(clone_id uuid, measured_value jsonb)
returns public.labs_replications
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  c public.labs_experiments;
  measured numeric;
  prediction double precision;
  row public.labs_replications;
begin
  if jsonb_typeof(measured_value) is distinct from 'number' then
    raise exception 'measured_value: must be a number' using errcode = '22023';
  end if;
  if not private.labs_plausible_number(measured_value) then
    raise exception 'measured_value: a number of magnitude at most 1e15 (and at least 1e-300 unless 0)' using errcode = '22023';
  end if;
  measured := (measured_value #>> '{}')::numeric;
  select * into c from public.labs_experiments e where e.id = clone_id and e.owner_id = me and e.cloned_from is not null;
  if c.id is null then
    raise exception 'no clone % of yours', clone_id using errcode = 'PT404';
  end if;
  select private.labs_predicted_value(t.predicted_values) into prediction from public.labs_experiments t where t.id = c.cloned_from;
  insert into public.labs_replications (clone_id, template_id, user_id, measured_value, predicted_value, confirmed)
  values (c.id, c.cloned_from, me, measured::double precision, prediction,
          case when prediction is not null
               then abs(measured - prediction::numeric) <= 0.05 * abs(prediction::numeric) end)
  returning * into row;
  if row.confirmed is not null then
    perform private.labs_record_activity(me, case when row.confirmed then 'replication_confirmed' else 'replication_refuted' end,
                                         c.id, c.cloned_from, row.id);
  end if;
  return row;
end
$$;
grant execute on function private.labs_report_replication(uuid,jsonb) to authenticated;

create or replace function public.labs_report_replication(clone_id uuid, measured_value jsonb)
returns public.labs_replications
language sql security invoker
set search_path = ''
as $$ select * from private.labs_report_replication(clone_id, measured_value) $$;
comment on function public.labs_report_replication(uuid, jsonb) is
  'Report a measured value on one''s own clone: a JSON number (not a string), magnitude at most 1e15 and at least 1e-300 '
  'unless 0; confirmed within 5 % of the prediction.';
grant execute on function labs_report_replication(uuid,jsonb) to authenticated, service_role;

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
grant execute on function private.labs_set_template_safety(uuid,text,text) to authenticated, service_role;

create or replace function public.labs_set_template_safety(template_id uuid, safety_level text, min_grade_band text default null)
returns public.labs_experiments
language sql security invoker
set search_path = ''
as $$ select * from private.labs_set_template_safety(template_id, safety_level, min_grade_band) $$;
grant execute on function labs_set_template_safety(uuid,text,text) to authenticated, service_role;

-- Sets a template's golden spec (super admins); every number bounded.
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
    if not private.labs_plausible_number(spec -> 'optimal_inputs' -> k) then
      raise exception 'optimal_inputs.%: a number of magnitude at most 1e15', k using errcode = '22023';
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
    if not private.labs_plausible_number(output -> 'value') then
      raise exception 'calculator_outputs.outputs.value: a number of magnitude at most 1e15' using errcode = '22023';
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
grant execute on function private.labs_set_golden_spec(uuid,jsonb) to authenticated, service_role;

create or replace function public.labs_set_golden_spec(template_id uuid, spec jsonb) returns public.labs_experiments
language sql security invoker
set search_path = ''
as $$ select * from private.labs_set_golden_spec(template_id, spec) $$;
grant execute on function labs_set_golden_spec(uuid,jsonb) to authenticated, service_role;

-- Numbers: every labs number (template inputs, golden specs, measured values) is a finite JSON
-- number within fixed bounds.

-- The largest magnitude a labs number may have: far beyond any quantity the six calculators
-- measure (frequencies in Hz, voltages, Q factors), far below where squares and sums of
-- double precision overflow.
create or replace function private.labs_max_magnitude() returns numeric
language sql immutable
set search_path = ''
as $$ select 1e15::numeric $$;
grant execute on function private.labs_max_magnitude() to authenticated, service_role;

-- The smallest non-zero magnitude: double precision holds nothing much smaller (1e-400 would
-- fail to convert, 1e-310 would lose its precision), and no calculator quantity comes near it.
create or replace function private.labs_min_magnitude() returns numeric
language sql immutable
set search_path = ''
as $$ select 1e-300::numeric $$;
grant execute on function private.labs_min_magnitude() to authenticated, service_role;

-- A JSON number within the bounds (false for any other JSON value, numeric strings included).
create or replace function private.labs_plausible_number(value jsonb) returns boolean
language sql immutable
set search_path = ''
as $$
  select coalesce(jsonb_typeof(value) = 'number'
                  and abs((value #>> '{}')::numeric) <= private.labs_max_magnitude()
                  and (abs((value #>> '{}')::numeric) >= private.labs_min_magnitude() or (value #>> '{}')::numeric = 0), false)
$$;
grant execute on function private.labs_plausible_number(jsonb) to authenticated, service_role;

-- Removed replications: what was removed, by whom and why. Plain uuids, no foreign keys: a
-- removal outlives the accounts and templates it names.
create table public.labs_replication_removals (
  id bigint generated always as identity primary key,
  replication_id uuid not null,
  template_id uuid not null,
  clone_id uuid,
  user_id uuid not null,
  measured_value double precision not null,
  confirmed boolean,
  reported_at timestamptz not null,
  removed_by uuid,
  reason text not null check (char_length(reason) between 1 and 1000),
  removed_at timestamptz not null default now()
);
alter table public.labs_replication_removals enable row level security;
comment on table public.labs_replication_removals is
  'Replications a super admin removed (the row as it was, who removed it and the mandatory reason). Super admins read; '
  'nobody updates or deletes (a trigger refuses it, whoever asks).';
comment on column public.labs_replication_removals.removed_by is 'The super admin; null for a direct database session.';
revoke all on public.labs_replication_removals from anon, authenticated, service_role;
grant select on public.labs_replication_removals to authenticated, service_role;

create index labs_replication_removals_template on public.labs_replication_removals (template_id, removed_at);

create index labs_replication_removals_newest on public.labs_replication_removals (removed_at desc, id desc);

create policy "labs_replication_removals: super admins read" on public.labs_replication_removals
  for select to authenticated using ((select private.is_super_admin()));

-- Super admins remove a replication with a reason (400 without; 404 unknown or already
-- removed): the only way a replication goes, short of its template or its reporter's account.
-- The removed report counts as never made: if it was the one that scored, its event goes and
-- the reporter's earliest remaining report on the template (if any) scores in its place, so
-- the next recompute reflects the reports that stand.
create or replace function private.labs_remove_replication(replication_id uuid, reason text)
returns public.labs_replication_removals
language plpgsql security definer
set search_path = ''
as $$
declare
  why text;
  r public.labs_replications;
  removal public.labs_replication_removals;
  was_scored boolean;
begin
  perform private.require_trusted_caller('remove replications');
  why := private.required_text(reason, 'reason', 1000);
  select * into r from public.labs_replications x where x.id = replication_id for update;
  if r.id is null then
    raise exception 'no replication %', replication_id using errcode = 'PT404';
  end if;
  -- The event first: deleting the replication would only set its replication_id to null.
  delete from public.labs_activity_events e where e.replication_id = r.id;
  was_scored := found;
  delete from public.labs_replications x where x.id = r.id;
  if was_scored then
    insert into public.labs_activity_events (user_id, kind, experiment_id, template_id, replication_id, created_at)
    select r.user_id, case when x.confirmed then 'replication_confirmed' else 'replication_refuted' end, x.clone_id, r.template_id,
           x.id, x.created_at
      from public.labs_replications x
     where x.user_id = r.user_id and x.template_id = r.template_id and x.confirmed is not null
     order by x.created_at, x.id
     limit 1
    on conflict do nothing;
  end if;
  insert into public.labs_replication_removals (replication_id, template_id, clone_id, user_id, measured_value, confirmed,
                                                reported_at, removed_by, reason)
  values (r.id, r.template_id, r.clone_id, r.user_id, r.measured_value, r.confirmed, r.created_at, (select auth.uid()), why)
  returning * into removal;
  return removal;
end
$$;
grant execute on function private.labs_remove_replication(uuid,text) to authenticated, service_role;

create or replace function public.labs_remove_replication(replication_id uuid, reason text)
returns public.labs_replication_removals
language sql security invoker
set search_path = ''
as $$ select * from private.labs_remove_replication(replication_id, reason) $$;
comment on function public.labs_remove_replication(uuid, text) is
  'Super admins: remove a replication (reason required); recorded in labs_replication_removals.';
grant execute on function labs_remove_replication(uuid,text) to authenticated, service_role;

-- Template and clone inputs, on every write (clients insert and update them through
-- PostgREST): an object of name to number, each finite and of magnitude at most 1e15.
create or replace function private.labs_check_experiment_inputs() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  k text;
begin
  if tg_op = 'UPDATE' and new.inputs is not distinct from old.inputs then
    return new;
  end if;
  if jsonb_typeof(new.inputs) is distinct from 'object' then
    raise exception 'inputs: an object of name to number' using errcode = '22023';
  end if;
  for k in select jsonb_object_keys(new.inputs) loop
    if not private.labs_plausible_number(new.inputs -> k) then
      raise exception 'inputs.%: a number of magnitude at most 1e15', k using errcode = '22023';
    end if;
  end loop;
  return new;
end
$$;
comment on function private.labs_check_experiment_inputs() is
  'BEFORE INSERT/UPDATE on labs_experiments: each input is a number of magnitude at most 1e15 (22023 naming it).';

create trigger labs_experiments_inputs before insert or update of inputs on public.labs_experiments
  for each row execute function private.labs_check_experiment_inputs();

-- The other client-written columns' rules in words, as /api says them (conventions.sql, "Field
-- rules in words"); the shape of inputs is labs_experiments_inputs' (just above), their size
-- this one's.
create or replace function private.labs_check_experiment_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_required('title', new.title);
  perform private.check_length('title', new.title, 200);
  perform private.check_required('calculator', new.calculator);
  perform private.check_one_of('calculator', new.calculator,
    array['resonance', 'coil', 'impedance', 'electrolysis', 'pulsed_dc', 'plasma']);
  perform private.check_required('inputs', new.inputs);
  if jsonb_typeof(new.inputs) = 'object' then
    perform private.check_object('inputs', new.inputs, 8192);
  end if;
  perform private.check_required('is_template', new.is_template);
  perform private.check_required('is_public', new.is_public);
  return new;
end
$$;
create trigger labs_experiments_check_fields
  before insert or update of title, calculator, inputs, is_template, is_public on public.labs_experiments
  for each row execute function private.labs_check_experiment_fields();

-- Competition weights: integers from 0 to 1000 (a larger one overflowed the recompute's
-- integer arithmetic for every competition).
create or replace function private.labs_valid_scoring_config(config jsonb) returns boolean
language sql immutable
set search_path = ''
as $$
  select jsonb_typeof(config) = 'object'
     and config - array['clone', 'completion', 'replication_confirmed', 'replication_refuted', 'build'] = '{}'::jsonb
     and not exists (select 1 from jsonb_each(config) w
                      where jsonb_typeof(w.value) <> 'number' or (w.value #>> '{}')::numeric not between 0 and 1000
                         or (w.value #>> '{}')::numeric <> trunc((w.value #>> '{}')::numeric))
$$;
grant execute on function private.labs_valid_scoring_config(jsonb) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Competitions and step prompts
-- ---------------------------------------------------------------------------------------------

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
    check (private.labs_valid_scoring_config(scoring_config)),
  created_at timestamptz not null default now(),
  constraint labs_competitions_window check (ends_at is null or ends_at > starts_at)
);
alter table public.labs_competitions enable row level security;
comment on table public.labs_competitions is
  'Labs competitions: participants score their activity events between starts_at and ends_at by scoring_config''s weights.';
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
alter table public.labs_competition_participants enable row level security;
comment on table public.labs_competition_participants is
  'Who entered which competition, with the score of the last recompute. Participants read their own rows; '
  'the leaderboard RPC shows the ranking.';
revoke all on public.labs_competition_participants from anon, authenticated, service_role;
grant select on public.labs_competition_participants to authenticated, service_role;

create index labs_competition_participants_user on public.labs_competition_participants (user_id);

create index labs_competition_participants_ranking on public.labs_competition_participants (competition_id, score desc, joined_at, user_id);

create policy "labs_competition_participants: own or super admin" on public.labs_competition_participants
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- Creates a competition (super admins); weights are integers from 0 to 1000.
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
  if ends_at <= coalesce(starts_at, now()) then
    raise exception 'ends_at: must be after starts_at' using errcode = '22023';
  end if;
  if scoring_config is not null then
    if jsonb_typeof(scoring_config) <> 'object' then
      raise exception 'scoring_config: an object of weights' using errcode = '22023';
    end if;
    for k in select jsonb_object_keys(scoring_config) loop
      if k not in ('clone', 'completion', 'replication_confirmed', 'replication_refuted', 'build') then
        raise exception 'scoring_config.%: not a scored activity', k using errcode = '22023';
      end if;
      if jsonb_typeof(scoring_config -> k) <> 'number' or (scoring_config ->> k)::numeric <> trunc((scoring_config ->> k)::numeric)
         or (scoring_config ->> k)::numeric not between 0 and 1000 then
        raise exception 'scoring_config.%: an integer weight from 0 to 1000', k using errcode = '22023';
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
grant execute on function private.labs_create_competition(text,text,timestamp with time zone,timestamp with time zone,jsonb) to authenticated, service_role;

create or replace function public.labs_create_competition(
  slug text, title text, starts_at timestamptz default null, ends_at timestamptz default null, scoring_config jsonb default null
) returns public.labs_competitions
language sql security invoker
set search_path = ''
as $$ select * from private.labs_create_competition(slug, title, starts_at, ends_at, scoring_config) $$;
grant execute on function labs_create_competition(text,text,timestamp with time zone,timestamp with time zone,jsonb) to authenticated, service_role;

-- Super admins: opens or closes a competition or its entries.
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
grant execute on function private.labs_update_competition(text,boolean,boolean) to authenticated, service_role;

create or replace function public.labs_update_competition(slug text, is_active boolean default null, entry_open boolean default null)
returns public.labs_competitions
language sql security invoker
set search_path = ''
as $$ select * from private.labs_update_competition(slug, is_active, entry_open) $$;
grant execute on function labs_update_competition(text,boolean,boolean) to authenticated, service_role;

-- Joins the caller to an active competition open for entries (once).
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
grant execute on function labs_join_competition(text) to authenticated, service_role;

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
grant execute on function labs_recompute_competitions() to authenticated, service_role;

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
grant execute on function private.labs_leaderboard(text,integer) to authenticated, service_role;

create or replace function public.labs_leaderboard(slug text, page_size integer default 50)
returns table (rank bigint, user_id uuid, full_name text, score integer, joined_at timestamptz)
language sql stable security invoker
set search_path = ''
as $$ select * from private.labs_leaderboard(slug, page_size) $$;
grant execute on function labs_leaderboard(text,integer) to authenticated, service_role;

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
grant execute on function labs_process_step_prompts(integer) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Sponsor outreach
-- ---------------------------------------------------------------------------------------------

create table public.labs_sponsor_messages (
  id uuid primary key default gen_random_uuid(),
  sponsor_id uuid not null references public.labs_sponsors (id) on delete cascade,
  sender_id uuid references public.profiles (id) on delete set null,
  body text not null check (char_length(body) between 1 and 4000),
  created_at timestamptz not null default now()
);
alter table public.labs_sponsor_messages enable row level security;
comment on table public.labs_sponsor_messages is
  'Messages relayed to approved sponsors: only the sender and the sponsor''s applicant read them, and no policy lets '
  'super admins (SPEC Other admin rules 1). The sender never sees who the applicant is. Written by '
  'private.labs_send_sponsor_message.';
comment on column public.labs_sponsor_messages.sender_id is
  'Null once the sender deleted their account: the message stays for the sponsor, from a deleted user.';
revoke all on public.labs_sponsor_messages from anon, authenticated, service_role;
grant select on public.labs_sponsor_messages to authenticated;

-- The cap (per sender and sponsor, last 24 hours) and the FK on sender_id.
create index labs_sponsor_messages_cap on public.labs_sponsor_messages (sender_id, sponsor_id, created_at);

create index labs_sponsor_messages_digest on public.labs_sponsor_messages (sponsor_id, created_at);

create policy "labs_sponsor_messages: sender and the sponsor's applicant only" on public.labs_sponsor_messages
  for select to authenticated
  using (sender_id = (select auth.uid()) or sponsor_id in (select private.labs_my_sponsor_ids()));

-- Relays a message to an approved sponsor's applicant, who is never named to the sender.
create or replace function private.labs_send_sponsor_message(sponsor_id uuid, body text) returns public.labs_sponsor_messages
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  sent integer;
  row public.labs_sponsor_messages;
  text_body text := private.required_text(body, 'body', 4000);
begin
  if not exists (select 1 from public.labs_sponsors s where s.id = sponsor_id and s.status = 'approved') then
    raise exception 'no approved sponsor %', sponsor_id using errcode = 'PT404';
  end if;
  perform pg_advisory_xact_lock(hashtextextended('labs_outreach:' || me::text || ':' || sponsor_id::text, 0));
  select count(*) into sent from public.labs_sponsor_messages m
   where m.sender_id = me and m.sponsor_id = labs_send_sponsor_message.sponsor_id and m.created_at > now() - interval '24 hours';
  if sent >= 5 then
    raise exception 'at most 5 messages per 24 hours to one sponsor; try again later' using errcode = 'PT429';
  end if;
  insert into public.labs_sponsor_messages (sponsor_id, sender_id, body)
  values (sponsor_id, me, text_body)
  returning * into row;
  return row;
end
$$;
grant execute on function private.labs_send_sponsor_message(uuid,text) to authenticated;

create or replace function public.labs_send_sponsor_message(sponsor_id uuid, body text) returns public.labs_sponsor_messages
language sql security invoker
set search_path = ''
as $$ select * from private.labs_send_sponsor_message(sponsor_id, body) $$;
grant execute on function labs_send_sponsor_message(uuid,text) to authenticated, service_role;

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
grant execute on function private.labs_claim_outreach_digests(integer,uuid[]) to service_role;

create or replace function public.labs_claim_outreach_digests(batch_size integer default 50, skip_sponsors uuid[] default '{}')
returns table (sponsor_id uuid, week_start date, sponsor_name text, contact_email text, contact_name text, messages jsonb)
language sql security invoker
set search_path = ''
as $$ select * from private.labs_claim_outreach_digests(batch_size, skip_sponsors) $$;
grant execute on function labs_claim_outreach_digests(integer,uuid[]) to service_role;

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
grant execute on function private.labs_finish_outreach_digest(uuid,date,text,integer) to service_role;

create or replace function public.labs_finish_outreach_digest(sponsor_id uuid, week_start date, email_id text, message_count integer)
returns void
language sql security invoker
set search_path = ''
as $$ select private.labs_finish_outreach_digest(sponsor_id, week_start, email_id, message_count) $$;
grant execute on function labs_finish_outreach_digest(uuid,date,text,integer) to service_role;

-- ---------------------------------------------------------------------------------------------
-- Kit waitlist
-- ---------------------------------------------------------------------------------------------

create table public.labs_kit_waitlist (
  id uuid primary key default gen_random_uuid(),
  email text not null unique check (char_length(email) <= 320 and email = lower(email) and email ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$'),
  user_id uuid references public.profiles (id) on delete set null,
  created_at timestamptz not null default now()
);
alter table public.labs_kit_waitlist enable row level security;
comment on table public.labs_kit_waitlist is
  'Kit waitlist signups (one per address). Anyone may add one (an insert reports no row either way: see '
  'private.labs_kit_waitlist_signup); only super admins read the list.';
revoke all on public.labs_kit_waitlist from anon, authenticated, service_role;
grant select on public.labs_kit_waitlist to authenticated, service_role;
grant insert (email, user_id)
  on public.labs_kit_waitlist to anon;
grant insert (email, user_id)
  on public.labs_kit_waitlist to authenticated;

create index labs_kit_waitlist_user on public.labs_kit_waitlist (user_id);

create index labs_kit_waitlist_created on public.labs_kit_waitlist (created_at desc, id desc);

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
grant execute on function labs_kit_waitlist_gate(date) to authenticated, service_role;

-- Before each insert, whoever writes it (PostgREST as anon or a user, /api, SQL): the checks
-- that could fail run first and fail alike for a new and a listed address (the address is
-- normalised, a user may only name themselves); then the trigger writes the row itself with
-- ON CONFLICT DO NOTHING and skips the statement's own row. So every sign-up answers alike:
-- no 409 from the unique index, and no row count (Prefer: count=exact) that differs. Two
-- sign-ups of one new address at once: one row, both succeed.
create or replace function private.labs_kit_waitlist_signup() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  caller_role text := private.request_role();
begin
  if current_setting('labs.kit_waitlist_signup', true) = 'on' then
    return new; -- the trigger's own insert below
  end if;
  new.email := private.valid_email(new.email, 'email');
  if caller_role in ('anon', 'authenticated') and new.user_id is not null and new.user_id is distinct from (select auth.uid()) then
    raise exception 'user_id: only your own (or none)' using errcode = '42501';
  end if;
  perform set_config('labs.kit_waitlist_signup', 'on', true);
  insert into public.labs_kit_waitlist (id, email, user_id, created_at)
  values (new.id, new.email, new.user_id, new.created_at)
  on conflict (email) do nothing;
  perform set_config('labs.kit_waitlist_signup', 'off', true);
  return null;
end
$$;
comment on function private.labs_kit_waitlist_signup() is
  'BEFORE INSERT on labs_kit_waitlist: validates, then inserts the row itself unless the address is listed, and skips '
  'the statement''s row, so a listed address cannot be told from a new one (no probing who signed up).';

create trigger labs_kit_waitlist_signup before insert on public.labs_kit_waitlist
  for each row execute function private.labs_kit_waitlist_signup();
