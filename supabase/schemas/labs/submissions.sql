-- =============================================================================================
-- Labs: sponsors, opportunities, dream videos
-- =============================================================================================
-- Submitted records, their review and the public listings (routes/labs/submissions.ts).
-- The area's overview: labs/shared.sql.

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

create policy "labs_sponsors: anyone reads approved" on public.labs_sponsors
  for select to anon using (status = 'approved');

create policy "labs_opportunities: anyone reads approved" on public.labs_opportunities
  for select to anon using (status = 'approved');

create policy "labs_dream_videos: anyone reads approved" on public.labs_dream_videos
  for select to anon using (status = 'approved');

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
-- with them (the public tables name no user to cascade from). One function for the three
-- kinds: the trigger's arguments name the public table and the private row's column of its id.
create or replace function private.labs_forget_public_record() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  execute format('delete from public.%I where id = $1', tg_argv[0]) using (to_jsonb(old) ->> tg_argv[1])::uuid;
  return null;
end
$$;
comment on function private.labs_forget_public_record() is
  'After a record''s private row goes (its submitter deleted), the public record goes too: '
  'trigger arguments (public table, the private row''s id column).';

create trigger labs_forget_sponsor after delete on private.labs_sponsor_private
  for each row execute function private.labs_forget_public_record('labs_sponsors', 'sponsor_id');

create trigger labs_forget_opportunity after delete on private.labs_opportunity_private
  for each row execute function private.labs_forget_public_record('labs_opportunities', 'opportunity_id');

create trigger labs_forget_video after delete on private.labs_dream_video_private
  for each row execute function private.labs_forget_public_record('labs_dream_videos', 'video_id');

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
