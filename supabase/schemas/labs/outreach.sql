-- =============================================================================================
-- Labs: sponsor outreach and step prompts
-- =============================================================================================
-- Messages to sponsors, their weekly digests, and the step prompts of unfinished clones (the
-- jobs routes/labs/outreach.ts runs). The area's overview: labs/shared.sql.

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
-- Step prompts
-- ---------------------------------------------------------------------------------------------

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
