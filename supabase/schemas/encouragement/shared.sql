-- =============================================================================================
-- Encouragement drops
-- =============================================================================================
-- Encouragement drops: messages users send each other, a daily allowance that
-- engagement bonuses raise, the seven-level badge ladder with milestones and a leaderboard,
-- note analysis and the daily assistant drop. "Drops" here are messages, never the drops
-- currency: nothing in this file touches the drops ledger.
--
-- Days are UTC days (private.utc_today()). Writes that touch allowances, engagement or awards
-- are single SQL functions; concurrent calls cannot exceed an allowance or pay a bonus twice.
--
--   send                 public.send_encouragement_drop(...)       one transaction, row-locked allowance
--   engagement           public.process_encouragement_engagement()  set-based, hourly pg_cron
--   badges               private.recalculate_encouragement_badges(user_ids uuid[])
--   AI jobs (edge)       public.claim_ai_job_chunk(job, chunk_size) + save_note_analysis /
--                        send_assistant_drop / fail_ai_job_item    (service role only)
--
-- The area is split as its routes are (functions/api/routes/encouragement/), loaded in this
-- order (supabase/config.toml, schema_paths): shared, admin, badges, drops, scheduled. This
-- file: the helpers and the drops' tables every other one reads.

-- ---------------------------------------------------------------------------------------------
-- Helpers
-- ---------------------------------------------------------------------------------------------

create or replace function private.utc_today() returns date
language sql stable
set search_path = ''
as $$ select (now() at time zone 'UTC')::date $$;
comment on function private.utc_today() is 'The current UTC day: every daily counter of this area uses it.';
grant execute on function private.utc_today() to authenticated, service_role;

-- The fixed system user that sends the daily assistant drops (README: ASSISTANT_SYSTEM_USER_ID).
create or replace function private.assistant_user_id() returns uuid
language sql immutable
set search_path = ''
as $$ select 'a5515700-0000-4000-8000-000000000001'::uuid $$;
comment on function private.assistant_user_id() is 'ASSISTANT_SYSTEM_USER_ID: the sender of daily assistant drops.';
grant execute on function private.assistant_user_id() to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Daily records and sent drops
-- ---------------------------------------------------------------------------------------------

create table public.encouragement_daily_drops (
  user_id uuid not null references public.profiles (id) on delete cascade,
  day date not null,
  daily_allowance integer not null check (daily_allowance >= 0),
  drops_used integer not null default 0 check (drops_used >= 0),
  custom_used integer not null default 0 check (custom_used >= 0),
  bonus_earned integer not null default 0 check (bonus_earned >= 0),
  total_available integer generated always as (daily_allowance + bonus_earned - drops_used) stored,
  primary key (user_id, day),
  constraint encouragement_daily_drops_within_allowance check (drops_used <= daily_allowance + bonus_earned)
);
alter table public.encouragement_daily_drops enable row level security;
comment on table public.encouragement_daily_drops is
  'A user''s sending capacity per UTC day: allowance (from the configuration when the day''s row is made), used, custom used, bonus earned by engagement; total_available = allowance + bonus - used.';
revoke all on public.encouragement_daily_drops from anon, authenticated, service_role;
grant select on public.encouragement_daily_drops to authenticated, service_role;

create policy "encouragement_daily_drops: owners and super admins read" on public.encouragement_daily_drops
  for select to authenticated using (user_id = (select auth.uid()) or (select private.is_super_admin()));

create table public.encouragement_sent_drops (
  id uuid primary key default gen_random_uuid(),
  sender_id uuid references public.profiles (id) on delete set null,
  recipient_id uuid not null references public.profiles (id) on delete cascade,
  drop_type text not null check (drop_type in ('encouragement', 'media', 'science_tidbit')),
  template_id uuid,
  content text not null check (char_length(content) between 1 and 2000),
  entry_id uuid,
  is_custom boolean not null default false,
  is_system boolean not null default false,
  date_sent timestamptz not null default now(),
  sent_day date not null default private.utc_today(),
  read_at timestamptz,
  engaged_at timestamptz,
  bonus_drops_awarded integer not null default 0 check (bonus_drops_awarded >= 0)
);
alter table public.encouragement_sent_drops enable row level security;
comment on table public.encouragement_sent_drops is
  'Sent encouragement drops. Unjudged while in private.encouragement_unjudged_drops (engagement processing judges each once, writing engaged_at and bonus_drops_awarded of engaged drops only); bonus_drops_awarded > 0 marks a successful drop. is_system: the daily assistant drop (not counted against allowances).';
comment on column public.encouragement_sent_drops.sender_id is
  'Null once the sender deleted their account: the drop stays in the recipient''s history, from a deleted user.';
comment on column public.encouragement_sent_drops.template_id is
  'The template sent (no foreign key: the drop keeps its text and this id after the template is deleted, and engagement runs maintain one index less).';
comment on column public.encouragement_sent_drops.entry_id is
  'The entry the drop is about, checked visible to the sender at send time; kept (no foreign key) after the entry is deleted.';
comment on column public.encouragement_sent_drops.engaged_at is
  'When the recipient''s journal entries and goal check-ins after the drop passed their baseline (their average per window over the 7 windows before it, frozen when the drop was sent), within the engagement window; null if they did not (or their account was too new to have a baseline).';
revoke all on public.encouragement_sent_drops from anon, authenticated, service_role;
grant select on public.encouragement_sent_drops to authenticated, service_role;

create index encouragement_sent_drops_inbox on public.encouragement_sent_drops (recipient_id, date_sent desc, id desc);

create index encouragement_sent_drops_unread on public.encouragement_sent_drops (recipient_id, date_sent desc, id desc)
  where read_at is null;

-- A sender's drops (the badge recalculation reads only this index: sent_day and the bonus are in it).
create index encouragement_sent_drops_by_sender on public.encouragement_sent_drops (sender_id, sent_day)
  include (bonus_drops_awarded);

-- The drops engagement processing has still to judge: a narrow queue, filled as drops are written
-- (the baseline trigger below) and emptied as they are judged. Judging a drop deletes its row
-- here (a narrow row, two index entries); only an engaged drop's own row is rewritten
-- (engaged_at, bonus_drops_awarded): a drop not engaged keeps its defaults. A flag on the drop,
-- in the unjudged index's predicate, rewrote every judged drop with entries in all its indexes.
-- The row carries what judging reads (the drop's parties, day and kind, the frozen baseline), so
-- a chunk is judged from the queue alone: fetching each drop, its recipient and its baseline by
-- key took a third of a chunk at 10,000,000 drops.
create table private.encouragement_unjudged_drops (
  drop_id uuid primary key references public.encouragement_sent_drops (id) on delete cascade,
  date_sent timestamptz not null,
  sent_day date not null,
  sender_id uuid,
  recipient_id uuid not null,
  is_system boolean not null,
  baseline_activity integer not null,
  baseline_established boolean not null
);
comment on table private.encouragement_unjudged_drops is
  'The sent drops engagement processing has not judged yet (oldest date_sent first); a row leaves when its drop is judged. date_sent, sent_day, sender_id, recipient_id and is_system are the drop''s (kept equal by a trigger, the sender''s deletion included); baseline_* the drop''s frozen baseline (private.encouragement_drop_baselines; none: not established). Filled by private.queue_unjudged_drops.';

-- Oldest first; drops sent at the same moment in id order (chunks of any size judge in one order).
create index encouragement_unjudged_drops_by_date on private.encouragement_unjudged_drops (date_sent, drop_id);

-- At most one assistant drop per user and day.
create unique index encouragement_sent_drops_one_assistant_drop_a_day
  on public.encouragement_sent_drops (recipient_id, sent_day) where is_system;

create policy "encouragement_sent_drops: sender, recipient and super admins read" on public.encouragement_sent_drops
  for select to authenticated
  using (sender_id = (select auth.uid()) or recipient_id = (select auth.uid()) or (select private.is_super_admin()));

-- Realtime: a recipient sees a drop arrive (INSERT), with the columns the policy above already
-- shows them (a recipient reads their drops whole, the sender's id included: SPEC's sent-drop
-- fields); a sender sees their own drops change (read_at, engagement). Nobody else: Realtime
-- checks each change with the subscriber's claims against this policy. docs/encouragement.md.
alter publication supabase_realtime add table public.encouragement_sent_drops;

-- Which sender-recipient pairs were already paid a bonus on a day (anti-gaming: one per pair and day).
create table private.encouragement_bonus_pairs (
  sender_id uuid not null,
  recipient_id uuid not null,
  day date not null,
  drop_id uuid not null,
  primary key (sender_id, recipient_id, day)
);
comment on table private.encouragement_bonus_pairs is
  'One engagement bonus per sender, recipient and UTC send day. Bookkeeping only (no foreign keys: a bulk engagement run inserts here without per-row checks); pruned by each engagement run once no unjudged drop can read a pair (private.prune_encouragement_bonus_pairs).';
