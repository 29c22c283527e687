-- Labs integrity (issue 20, findings 5, 6, 11 and 13). Supersedes parts of
-- 20261122070000_labs.sql; each redefined function names the definition it replaces.
--
-- 1. Who submitted a sponsor, opportunity or dream video is private: the submitter's id moves
--    from the public tables to the private ones (like the contact fields), so no path shows it
--    to anonymous callers or other users; the submitter still reads their own records
--    (RLS through private helpers) and lists them with public.labs_my_submissions(). Outreach
--    messages lose recipient_id (the sponsor's applicant): the recipient reads them as the
--    sponsor's owner, and a sender never learns who that is.
-- 2. Kit waitlist: an address already listed gets the same answer as a new one on every path
--    (a trigger validates first, then writes the row itself, skipping a listed address,
--    instead of letting the unique index answer 409 or the row count tell).
-- 3. Competition scores count what SPEC's weights mean: activity on curated templates (a super
--    admin gave them a golden spec) of others only, each kind (clone, completion, build,
--    replication) at most once per user and template, enforced by a unique index on the events
--    the recompute sums. Anyone may publish templates; only curation makes them count.
-- 4. Replications: measured values are JSON numbers within bounds (magnitude at most 1e15, and
--    at least 1e-300 unless 0; 400 naming the field), the statistics use numeric arithmetic so
--    no stored value can make them overflow, a replication outlives the clone it was reported
--    on, and only a super admin removes one, with an audited reason.
-- 5. The other numeric inputs of labs are bounded the same way: template inputs (also written
--    directly through PostgREST), golden specs, competition weights (0..1000).

-- =========================================================================================
-- 1. Submitter ids out of the public tables
-- =========================================================================================

-- The id moves into each record's private row. A public row without one (written directly,
-- never through the submit functions) gets a private row with empty contact fields.
alter table private.labs_sponsor_private add column applicant_id uuid references public.profiles (id) on delete cascade;
insert into private.labs_sponsor_private (sponsor_id, contact_email, contact_name)
select s.id, '', '' from public.labs_sponsors s
 where not exists (select 1 from private.labs_sponsor_private p where p.sponsor_id = s.id);
update private.labs_sponsor_private p set applicant_id = s.applicant_id from public.labs_sponsors s where s.id = p.sponsor_id;
alter table private.labs_sponsor_private alter column applicant_id set not null;
create index labs_sponsor_private_applicant on private.labs_sponsor_private (applicant_id);

alter table private.labs_opportunity_private add column submitter_id uuid references public.profiles (id) on delete cascade;
insert into private.labs_opportunity_private (opportunity_id, contact_email, contact_name)
select o.id, '', '' from public.labs_opportunities o
 where not exists (select 1 from private.labs_opportunity_private p where p.opportunity_id = o.id);
update private.labs_opportunity_private p set submitter_id = o.submitter_id from public.labs_opportunities o where o.id = p.opportunity_id;
alter table private.labs_opportunity_private alter column submitter_id set not null;
create index labs_opportunity_private_submitter on private.labs_opportunity_private (submitter_id);

alter table private.labs_dream_video_private add column submitter_id uuid references public.profiles (id) on delete cascade;
insert into private.labs_dream_video_private (video_id)
select v.id from public.labs_dream_videos v
 where not exists (select 1 from private.labs_dream_video_private p where p.video_id = v.id);
update private.labs_dream_video_private p set submitter_id = v.submitter_id from public.labs_dream_videos v where v.id = p.video_id;
alter table private.labs_dream_video_private alter column submitter_id set not null;
create index labs_dream_video_private_submitter on private.labs_dream_video_private (submitter_id);

comment on table private.labs_sponsor_private is
  'A sponsor''s applicant, contact fields and decline reason: super admins read them through the review RPCs only.';
comment on table private.labs_opportunity_private is
  'An opportunity''s submitter, contact fields and decline reason (super admins, through RPCs).';
comment on table private.labs_dream_video_private is 'A dream video''s submitter and decline reason (super admins, through RPCs).';

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

drop policy "labs_sponsors: approved, own, or super admin" on public.labs_sponsors;
drop policy "labs_opportunities: approved, own, or super admin" on public.labs_opportunities;
drop policy "labs_dream_videos: approved, own, or super admin" on public.labs_dream_videos;
alter table public.labs_sponsors drop column applicant_id;
alter table public.labs_opportunities drop column submitter_id;
alter table public.labs_dream_videos drop column submitter_id;

create policy "labs_sponsors: approved, own, or super admin" on public.labs_sponsors
  for select to authenticated
  using (status = 'approved' or id in (select private.labs_my_sponsor_ids()) or (select private.is_super_admin()));
create policy "labs_opportunities: approved, own, or super admin" on public.labs_opportunities
  for select to authenticated
  using (status = 'approved' or id in (select private.labs_my_opportunity_ids()) or (select private.is_super_admin()));
create policy "labs_dream_videos: approved, own, or super admin" on public.labs_dream_videos
  for select to authenticated
  using (status = 'approved' or id in (select private.labs_my_video_ids()) or (select private.is_super_admin()));
comment on policy "labs_sponsors: approved, own, or super admin" on public.labs_sponsors is
  'Own: the applicant is in private.labs_sponsor_private, so no reader learns who applied for an approved sponsor.';

comment on table public.labs_sponsors is
  'Sponsor applications. Public listings show approved ones; the applicant sees their own (labs_my_submissions). '
  'The applicant, contact fields and decline reason are in private.labs_sponsor_private.';
comment on table public.labs_opportunities is
  'Internships, scholarships, fellowships and mentorships submitted for the labs listing (approved ones are public). '
  'The submitter and contact fields are in private.labs_opportunity_private.';
comment on table public.labs_dream_videos is
  'Dream videos (a submitted video URL); approved ones are public, featured ones first. The submitter is in '
  'private.labs_dream_video_private.';

-- A profile's deletion removes its private rows (foreign key); these take the public records
-- with them, as the dropped columns' foreign keys did.
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

-- Supersedes private.labs_submit_sponsor of 20261122070000_labs.sql: the applicant goes to the private row.
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

-- Supersedes private.labs_submit_opportunity of 20261122070000_labs.sql.
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
  insert into public.labs_opportunities (kind, title, description, url)
  values (kind, private.required_text(title, 'title', 200), coalesce(description, ''), url)
  returning * into row;
  insert into private.labs_opportunity_private (opportunity_id, submitter_id, contact_email, contact_name)
  values (row.id, me, private.valid_email(contact_email, 'contact_email'), private.required_text(contact_name, 'contact_name', 200));
  return row;
end
$$;

-- Supersedes private.labs_submit_dream_video of 20261122070000_labs.sql.
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

-- Supersedes private.labs_pending of 20261122070000_labs.sql: the queue shows super admins the
-- submitter too.
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
grant execute on function public.labs_my_submissions() to authenticated;

-- Outreach messages: recipient_id (the sponsor's applicant) goes; the recipient reads the
-- messages of the sponsors they applied for.
drop policy "labs_sponsor_messages: sender and recipient only" on public.labs_sponsor_messages;
alter table public.labs_sponsor_messages drop column recipient_id;
create policy "labs_sponsor_messages: sender and the sponsor's applicant only" on public.labs_sponsor_messages
  for select to authenticated
  using (sender_id = (select auth.uid()) or sponsor_id in (select private.labs_my_sponsor_ids()));
comment on table public.labs_sponsor_messages is
  'Messages relayed to approved sponsors: only the sender and the sponsor''s applicant read them, and no policy lets '
  'super admins (SPEC Other admin rules 1). The sender never sees who the applicant is. Written by '
  'private.labs_send_sponsor_message.';

-- Supersedes private.labs_send_sponsor_message of 20261122070000_labs.sql (no recipient column).
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

-- =========================================================================================
-- 2. Kit waitlist: one answer whether or not the address is listed
-- =========================================================================================

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
comment on table public.labs_kit_waitlist is
  'Kit waitlist signups (one per address). Anyone may add one (an insert reports no row either way: see '
  'private.labs_kit_waitlist_signup); only super admins read the list.';

-- =========================================================================================
-- 3. Competition scoring: curated templates of others, once per user, template and kind
-- =========================================================================================

-- Events are keyed on (user, template, kind), never on a row the user can delete: a clone or a
-- template that goes leaves its events (set null), so deleting and redoing scores nothing new.
alter table public.labs_activity_events
  add column template_id uuid references public.labs_experiments (id) on delete set null,
  add column replication_id uuid references public.labs_replications (id) on delete set null;
comment on column public.labs_activity_events.template_id is 'The curated public template the activity was on.';
comment on column public.labs_activity_events.replication_id is
  'The replication a replication_* event scored. Only private.labs_remove_replication (super admins) takes the event '
  'out with it.';
create index labs_activity_events_template on public.labs_activity_events (template_id);
create index labs_activity_events_replication on public.labs_activity_events (replication_id);

-- Existing events: tie each to its template (and replication), then keep only what the rules
-- below would have recorded: the first of each kind per user and template, on a curated public
-- template of someone else. Events that cannot be tied to a template (their clone deleted)
-- cannot be checked and go.
update public.labs_activity_events e set template_id = c.cloned_from
  from public.labs_experiments c where c.id = e.experiment_id;
update public.labs_activity_events e
   set replication_id = (select r.id from public.labs_replications r
                          where r.clone_id = e.experiment_id and r.user_id = e.user_id and r.created_at = e.created_at
                            and r.confirmed = (e.kind = 'replication_confirmed')
                          order by r.id limit 1)
 where e.kind in ('replication_confirmed', 'replication_refuted');
delete from public.labs_activity_events e
 where e.template_id is null
    or not exists (select 1 from public.labs_experiments t
                    where t.id = e.template_id and t.is_public and t.owner_id <> e.user_id and t.predicted_values is not null);
delete from public.labs_activity_events e
 where exists (select 1 from public.labs_activity_events x
                where x.user_id = e.user_id and x.template_id = e.template_id
                  and (x.kind = e.kind or (x.kind like 'replication%' and e.kind like 'replication%'))
                  and (x.created_at, x.id) < (e.created_at, e.id));
delete from public.labs_activity_events e
 where e.kind <> 'clone'
   and not exists (select 1 from public.labs_activity_events x
                    where x.user_id = e.user_id and x.template_id = e.template_id and x.kind = 'clone');

-- At most one scored event per user, template and kind (confirmed and refuted are one kind:
-- the first replication a user reports on a template decides which).
create unique index labs_activity_events_once_per_template on public.labs_activity_events
  (user_id, template_id, (case when kind in ('replication_confirmed', 'replication_refuted') then 'replication' else kind end));
comment on table public.labs_activity_events is
  'Labs activity that competitions score (scoring_config weights per kind): on curated (golden-spec) public templates of '
  'others only, at most one clone, completion, build and replication per user and template. Users read their own.';

-- Supersedes private.labs_record_activity(uuid, text, uuid) of 20261122070000_labs.sql. A
-- clone scores when the template is public, not the caller's and curated: a super admin gave
-- it a golden spec (predicted_values, which no client role may write: the column is in no
-- insert or update grant, so private.labs_set_golden_spec is the only way in). Anyone may
-- publish templates, so without curation a second account could mint scores at will. A
-- completion, build or replication scores only after a scored clone of the same template.
-- Repeats change nothing.
drop function private.labs_record_activity(uuid, text, uuid);
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
revoke all on function private.labs_record_activity(uuid, text, uuid, uuid, uuid) from public;

-- Supersedes private.labs_clone_template of 20261122070000_labs.sql (the template goes with the event).
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

-- Supersedes private.labs_complete_clone of 20261122070000_labs.sql. A build is what the
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

-- =========================================================================================
-- 4. Replications: bounded input, statistics that cannot overflow, kept past their clone,
--    audited removal
-- =========================================================================================

-- A replication outlives the clone it was reported on (replaces the foreign key of
-- 20261122070000_labs.sql, which deleted it with the clone). The owner may still tidy their
-- experiments away, but a report is part of the template's shared record: deleting the clone
-- neither drops it from the statistics nor frees the "first replication" that scored. The
-- reporter keeps reading it (RLS on user_id); only private.labs_remove_replication removes it.
alter table public.labs_replications alter column clone_id drop not null;
alter table public.labs_replications drop constraint labs_replications_clone_id_fkey;
alter table public.labs_replications add constraint labs_replications_clone_id_fkey
  foreign key (clone_id) references public.labs_experiments (id) on delete set null;
comment on column public.labs_replications.clone_id is 'The clone it was reported on; null once its owner deleted the clone.';

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

-- Supersedes private.labs_predicted_value of 20261122070000_labs.sql: a stored prediction out of
-- bounds (from before they existed) is no prediction rather than an error.
create or replace function private.labs_predicted_value(spec jsonb) returns double precision
language sql immutable
set search_path = ''
as $$
  select case when private.labs_plausible_number(spec -> 'calculator_outputs' -> 'outputs' -> 0 -> 'value')
              then (spec -> 'calculator_outputs' -> 'outputs' -> 0 ->> 'value')::double precision end
$$;

-- Replaces labs_report_replication(uuid, double precision) of 20261122070000_labs.sql: the value
-- arrives as jsonb and must be a JSON number, as on /api (a numeric string such as "12" is
-- refused, not converted), within the bounds: 1e400 and 1e-400 are refused naming the field
-- instead of failing their conversion to double precision.
drop function public.labs_report_replication(uuid, double precision);
drop function private.labs_report_replication(uuid, double precision);
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
grant execute on function private.labs_report_replication(uuid, jsonb) to authenticated;
create or replace function public.labs_report_replication(clone_id uuid, measured_value jsonb)
returns public.labs_replications
language sql security invoker
set search_path = ''
as $$ select * from private.labs_report_replication(clone_id, measured_value) $$;
comment on function public.labs_report_replication(uuid, jsonb) is
  'Report a measured value on one''s own clone: a JSON number (not a string), magnitude at most 1e15 and at least 1e-300 '
  'unless 0; confirmed within 5 % of the prediction.';
grant execute on function public.labs_report_replication(uuid, jsonb) to authenticated;

-- Replaces private.labs_template_stats of 20261122070000_labs.sql (mean and stddev were double
-- precision: two values near ±1e308 overflowed every listing). Numeric arithmetic holds any
-- stored double precision value and its squares; mean and stddev come back as numeric.
drop function private.labs_template_stats(uuid[]);
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

-- Supersedes private.labs_template_replications of 20261122070000_labs.sql (numeric arithmetic).
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
comment on table public.labs_replication_removals is
  'Replications a super admin removed (the row as it was, who removed it and the mandatory reason). Super admins read; '
  'nobody updates or deletes (a trigger refuses it, whoever asks).';
comment on column public.labs_replication_removals.removed_by is 'The super admin; null for a direct database session.';
create index labs_replication_removals_template on public.labs_replication_removals (template_id, removed_at);
create index labs_replication_removals_newest on public.labs_replication_removals (removed_at desc, id desc);
alter table public.labs_replication_removals enable row level security;
revoke all on public.labs_replication_removals from anon, authenticated, service_role;
grant select on public.labs_replication_removals to authenticated, service_role;
create policy "labs_replication_removals: super admins read" on public.labs_replication_removals
  for select to authenticated using ((select private.is_super_admin()));
create trigger labs_replication_removals_immutable before update or delete on public.labs_replication_removals
  for each row execute function private.refuse_audit_change();
create trigger labs_replication_removals_no_truncate before truncate on public.labs_replication_removals
  for each statement execute function private.refuse_audit_change();

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
grant execute on function private.labs_remove_replication(uuid, text) to authenticated, service_role;
create or replace function public.labs_remove_replication(replication_id uuid, reason text)
returns public.labs_replication_removals
language sql security invoker
set search_path = ''
as $$ select * from private.labs_remove_replication(replication_id, reason) $$;
comment on function public.labs_remove_replication(uuid, text) is
  'Super admins: remove a replication (reason required); recorded in labs_replication_removals.';
grant execute on function public.labs_remove_replication(uuid, text) to authenticated, service_role;

-- =========================================================================================
-- 5. The other numbers: template inputs, golden specs, competition weights
-- =========================================================================================

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

-- Supersedes private.labs_set_golden_spec of 20261122070000_labs.sql: every number bounded.
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

-- Competition weights: integers from 0 to 1000 (a larger one overflowed the recompute's
-- integer arithmetic for every competition). Existing weights are brought into range first.
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
update public.labs_competitions c
   set scoring_config = (select jsonb_object_agg(w.key,
                                  case when jsonb_typeof(w.value) = 'number'
                                       then to_jsonb(least(greatest(trunc((w.value #>> '{}')::numeric), 0), 1000)::integer)
                                       else '0'::jsonb end)
                           from jsonb_each(c.scoring_config) w)
 where not private.labs_valid_scoring_config(c.scoring_config);
alter table public.labs_competitions drop constraint labs_competitions_scoring_config_check;
alter table public.labs_competitions add constraint labs_competitions_scoring_config_check
  check (private.labs_valid_scoring_config(scoring_config));

-- Supersedes private.labs_create_competition of 20261122070000_labs.sql: weights 0..1000.
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
