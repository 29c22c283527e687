-- =============================================================================================
-- Journal: tone analysis as a queued job (SPEC "Tone analysis" rules 1-3, docs/ai.md)
-- =============================================================================================
-- Every write of an entry's text by a user, whatever the path (/api, the create/update RPCs, a
-- direct PostgREST insert or update), queues the entry when SPEC rule 1 applies: text that is
-- not blank, new or really changed, and no mood the user chose. Writes without a signed-in user
-- (the SQL editor, the seed, a bulk import) are not analysed: they never spend AI calls. The api's worker
-- (POST /api/journal/cron/analyze-tone) claims queued entries, asks the model and applies the
-- mood through private.apply_tone_analysis (only above 0.5 confidence, never over a mood the
-- user chose meanwhile, never for a text changed meanwhile). Writes never wait for the model.
--
-- Starting the worker: the write that queues work while no worker is running or requested
-- sends one request to it (pg_net, in the writer's transaction: sent once it commits), and
-- marks it requested in private.tone_worker, so a burst of writes makes one request; a worker
-- keeps claiming until the queue is empty, then clears the mark, but never sooner than
-- min_request_gap after the last request (it keeps claiming meanwhile), so writes ask for at
-- most one worker per gap and no entry waits for pg_cron. pg_cron runs the worker every
-- minute as the safety net (a lost request, a killed worker: its claims expire after 60 s).
-- An entry whose owner has used today's cap is not queued: its claim would drop it uncalled.
-- Loaded after ai_usage.sql (apply_tone_analysis, claim_ai_calls, sha256_hex).

-- One row per entry waiting for analysis. `version` grows with each newer text queued, so a
-- worker finishing an older version never removes the newer one; a newer text also clears the
-- claim, so it is claimed (and analysed) again.
create table private.tone_analysis_queue (
  entry_id uuid primary key references public.journal_entries (id) on delete cascade,
  version integer not null default 1,
  queued_at timestamptz not null default now(),
  claimed_at timestamptz,
  attempts integer not null default 0
);
comment on table private.tone_analysis_queue is
  'Entries whose current text awaits tone analysis (one row per entry); claimed with a 60 s lease by the analyze-tone worker.';
create index tone_analysis_queue_due on private.tone_analysis_queue (queued_at);

-- The worker's state, one row. requested_at: a worker was requested or is running (refreshed
-- while it runs); null: none, so the next queued write sends a request. analysis_enabled: false
-- once a worker ran without AI_API_KEY (nothing is queued then); a worker with a key sets it back.
-- daily_cap: the cap the worker last claimed with (the api's AI_DAILY_CAP_TONE_ANALYSIS; null:
-- private.ai_usage_types' default), which writes compare with their owner's calls today.
-- last_requested_at: when a write (or a run handing over) last sent a request; a run stays
-- until min_request_gap after it.
create table private.tone_worker (
  id boolean primary key default true check (id),
  requested_at timestamptz,
  analysis_enabled boolean not null default true,
  daily_cap integer check (daily_cap >= 0),
  last_requested_at timestamptz,
  min_request_gap interval not null default interval '1 second'
    check (min_request_gap between interval '0' and interval '10 seconds')
);
comment on table private.tone_worker is
  'The tone analysis worker: whether one is requested or running (requested_at), whether analysis is configured (analysis_enabled), '
  'the daily cap it claims with (daily_cap), its last request (last_requested_at) and the least time between requests (min_request_gap).';
-- Its row is written by the migration (and again by the first claim, should it be missing).

-- A worker requested this long ago and silent since is presumed dead: the next write asks again.
create or replace function private.tone_worker_stale_after() returns interval
language sql immutable
set search_path = ''
as $$ select interval '30 seconds' $$;

-- Sends one request to the worker (pg_net; the URL and secret from Vault, as pg_cron's jobs).
-- The caller has set the worker's mark.
create or replace function private.request_tone_worker() returns void
language plpgsql security definer
set search_path = ''
as $$
declare
  url text;
  secret text;
begin
  update private.tone_worker w set last_requested_at = clock_timestamp() where w.id;
  select s.decrypted_secret into url from vault.decrypted_secrets s where s.name = 'project_url';
  select s.decrypted_secret into secret from vault.decrypted_secrets s where s.name = 'CHAT_CRON_SECRET';
  if url is null or secret is null then
    return; -- not configured: the pg_cron safety net (which needs the same) cannot run either
  end if;
  -- Sent when the writer commits (pg_net's queue is a table); never fails the write.
  begin
    perform net.http_post(
      url := url || '/functions/v1/api/journal/cron/analyze-tone',
      headers := jsonb_build_object('Content-Type', 'application/json', 'x-cron-secret', secret),
      body := jsonb_build_object('requested_at', now()),
      timeout_milliseconds := 60000);
  exception when others then
    raise warning 'tone worker request: %', sqlerrm;
  end;
end
$$;
revoke all on function private.request_tone_worker() from public;

-- Queues the entry's text when SPEC rule 1 applies, and asks for a worker if none is on its
-- way. The worker's mark is read with a share lock, held to the writer's commit: a worker
-- clearing the mark waits for writers that saw it set, then sees their rows.
create or replace function private.queue_tone_analysis() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  worker private.tone_worker;
  owner_id uuid;
begin
  if (select auth.uid()) is null or btrim(new.content) = ''
     or (tg_op = 'UPDATE' and new.content is not distinct from old.content) then
    return null; -- a user's writes only: SQL sessions (seed, imports, fixtures) spend no AI calls
  end if;
  select e.user_id into owner_id from public.journal_entries e
   where e.id = new.entry_id and (e.mood is null or e.mood_detected);
  if not found then
    return null; -- the user chose the mood: it is never overwritten
  end if;
  select * into worker from private.tone_worker w where w.id for share;
  if worker.analysis_enabled is false then
    return null;
  end if;
  -- Over the owner's cap the claim would drop the entry uncalled: queue nothing, ask for no
  -- worker (an entry queued earlier stays, and is dropped by its claim).
  if private.ai_daily_cap_reached(owner_id, 'tone_analysis', worker.daily_cap) then
    return null;
  end if;
  insert into private.tone_analysis_queue as q (entry_id) values (new.entry_id)
  on conflict on constraint tone_analysis_queue_pkey do update
    set version = q.version + 1, queued_at = now(), claimed_at = null, attempts = 0;
  if worker.requested_at is null or worker.requested_at < now() - private.tone_worker_stale_after() then
    update private.tone_worker w set requested_at = now()
     where w.id and (w.requested_at is null or w.requested_at < now() - private.tone_worker_stale_after());
    if found then
      perform private.request_tone_worker();
    end if;
  end if;
  return null;
end
$$;
create trigger journal_entry_contents_queue_tone_analysis
  after insert or update of content on public.journal_entry_contents
  for each row execute function private.queue_tone_analysis();

/*
 * The worker's side (service role; the public wrappers below are what the api calls).
 */

-- Claims up to max_items queued entries (skip locked: workers side by side never share one;
-- a claim older than 60 s belongs to a dead worker and is taken over). Each claimed entry
-- counts one call against its owner's daily cap (daily_cap as in claim_ai_calls, kept in
-- private.tone_worker for writes to compare with); entries over the cap, with a mood the user
-- chose meanwhile, with blank text, or claimed three times already are dropped. Returns
-- [{entry_id, version, user_id, title, content, content_sha256, cap_day}]. Also refreshes the
-- worker's mark, so writes do not request another.
create or replace function private.claim_tone_analyses(max_items integer, daily_cap integer)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  item record;
  claimed jsonb := '[]'::jsonb;
  grant_reply jsonb;
begin
  if max_items is null or max_items not between 1 and 100 then
    raise exception 'max_items: must be between 1 and 100' using errcode = '22023';
  end if;
  perform private.ai_daily_cap('tone_analysis', daily_cap); -- refuses a negative cap
  insert into private.tone_worker (id) values (true) on conflict on constraint tone_worker_pkey do nothing;
  update private.tone_worker w
     set requested_at = now(), analysis_enabled = true, daily_cap = claim_tone_analyses.daily_cap
   where w.id and (w.requested_at is null or w.requested_at < now() - interval '5 seconds' or not w.analysis_enabled
                   or w.daily_cap is distinct from claim_tone_analyses.daily_cap);
  for item in
    with due as (
      select q.entry_id from private.tone_analysis_queue q
       where q.claimed_at is null or q.claimed_at < now() - interval '60 seconds'
       order by q.queued_at
       limit max_items
         for update skip locked
    )
    update private.tone_analysis_queue q set claimed_at = now(), attempts = q.attempts + 1
      from due where q.entry_id = due.entry_id
    returning q.entry_id, q.version, q.attempts
  loop
    declare
      entry record;
    begin
      select e.user_id, e.title, e.mood, e.mood_detected, c.content into entry
        from public.journal_entries e join public.journal_entry_contents c on c.entry_id = e.id
       where e.id = item.entry_id;
      if not found or item.attempts > 3 or btrim(entry.content) = ''
         or (entry.mood is not null and not entry.mood_detected) then
        delete from private.tone_analysis_queue q where q.entry_id = item.entry_id and q.version = item.version;
        continue;
      end if;
      grant_reply := private.claim_ai_calls(entry.user_id, 'tone_analysis', 1, daily_cap);
      if (grant_reply ->> 'granted')::integer = 0 then
        delete from private.tone_analysis_queue q where q.entry_id = item.entry_id and q.version = item.version;
        continue;
      end if;
      claimed := claimed || jsonb_build_object(
        'entry_id', item.entry_id, 'version', item.version, 'user_id', entry.user_id, 'title', entry.title,
        'content', entry.content, 'content_sha256', private.sha256_hex(entry.content),
        'cap_day', case when (grant_reply ->> 'counted')::boolean then grant_reply ->> 'day' end);
    end;
  end loop;
  return claimed;
end
$$;
revoke all on function private.claim_tone_analyses(integer, integer) from public;
grant execute on function private.claim_tone_analyses(integer, integer) to service_role;
create or replace function public.claim_tone_analyses(max_items integer default 20, daily_cap integer default null)
returns jsonb
language sql
set search_path = ''
as $$ select private.claim_tone_analyses($1, $2) $$;
comment on function public.claim_tone_analyses(integer, integer) is
  'The analyze-tone worker (service role): claims queued entries to analyse, each counted against its owner''s daily cap.';

-- One analysis done (or failed: detected_mood and model null): records the billed call and
-- applies the mood (private.apply_tone_analysis: its rules), and removes the queue row unless
-- a newer text was queued meanwhile. Returns apply_tone_analysis's reply.
create or replace function private.finish_tone_analysis(
  entry_id uuid, version integer, user_id uuid, detected_mood text, content_sha256 text,
  model text, input_tokens integer, output_tokens integer
) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  applied jsonb;
begin
  applied := private.apply_tone_analysis(finish_tone_analysis.entry_id, finish_tone_analysis.user_id,
                                         detected_mood, content_sha256, model, input_tokens, output_tokens);
  delete from private.tone_analysis_queue q
   where q.entry_id = finish_tone_analysis.entry_id and q.version = finish_tone_analysis.version;
  return applied;
end
$$;
revoke all on function private.finish_tone_analysis(uuid, integer, uuid, text, text, text, integer, integer) from public;
grant execute on function private.finish_tone_analysis(uuid, integer, uuid, text, text, text, integer, integer) to service_role;
create or replace function public.finish_tone_analysis(
  entry_id uuid, version integer, user_id uuid, detected_mood text, content_sha256 text,
  model text default null, input_tokens integer default 0, output_tokens integer default 0
) returns jsonb
language sql
set search_path = ''
as $$ select private.finish_tone_analysis($1, $2, $3, $4, $5, $6, $7, $8) $$;
comment on function public.finish_tone_analysis(uuid, integer, uuid, text, text, text, integer, integer) is
  'The analyze-tone worker (service role): stores one analysis (apply_tone_analysis'' rules) and removes its queue row.';

-- The worker has nothing claimable left: clears its mark (waiting for writers that saw it set)
-- and says whether work arrived meanwhile; then the mark is set again and the worker goes on,
-- or, with hand_over (its time is up), a fresh worker is requested. Within min_request_gap of
-- the last request the mark stays and the worker goes on (true): writes meanwhile send no
-- request, and their entries are claimed by this run within a poll. A cleared mark therefore
-- always means the gap has passed (clock time: a writer reading the mark later sees a later
-- clock), so writes need no gap check of their own and never leave an entry to pg_cron.
create or replace function private.release_tone_worker(hand_over boolean) returns boolean
language plpgsql security definer
set search_path = ''
as $$
begin
  if not hand_over and exists (select 1 from private.tone_worker w
                                where w.id and w.last_requested_at > clock_timestamp() - w.min_request_gap) then
    return true;
  end if;
  update private.tone_worker w set requested_at = null where w.id;
  if not exists (select 1 from private.tone_analysis_queue q
                  where q.claimed_at is null or q.claimed_at < now() - interval '60 seconds') then
    return false;
  end if;
  update private.tone_worker w set requested_at = now() where w.id;
  if hand_over then
    perform private.request_tone_worker();
  end if;
  return true;
end
$$;
revoke all on function private.release_tone_worker(boolean) from public;
grant execute on function private.release_tone_worker(boolean) to service_role;
create or replace function public.release_tone_worker(hand_over boolean default false) returns boolean
language sql
set search_path = ''
as $$ select private.release_tone_worker($1) $$;
comment on function public.release_tone_worker(boolean) is
  'The analyze-tone worker (service role): ends its run; true when queued work arrived meanwhile or the last request is under min_request_gap old (the run continues, or with hand_over a new one is requested).';

-- A worker without AI_API_KEY: nothing is analysed, so nothing is queued either until a worker
-- with a key runs (pg_cron's minute run turns it back on). Returns the queued entries dropped.
create or replace function private.disable_tone_analysis() returns integer
language plpgsql security definer
set search_path = ''
as $$
declare
  dropped integer;
begin
  update private.tone_worker w set analysis_enabled = false, requested_at = null where w.id;
  delete from private.tone_analysis_queue;
  get diagnostics dropped = row_count;
  return dropped;
end
$$;
revoke all on function private.disable_tone_analysis() from public;
grant execute on function private.disable_tone_analysis() to service_role;
create or replace function public.disable_tone_analysis() returns integer
language sql
set search_path = ''
as $$ select private.disable_tone_analysis() $$;
comment on function public.disable_tone_analysis() is
  'The analyze-tone worker without AI_API_KEY (service role): stops queueing and drops the queue.';

-- Whether the entry's current text still awaits analysis, for its owner (false for anyone
-- else). Volatile, so it sees the queue row the same request's write just made. A PostgREST computed field of journal_entry_details rows: `select=*,mood_pending` on
-- the create/update RPCs and the view; POST/PUT /api/journal reply with it.
create or replace function private.tone_analysis_pending(entry_id uuid, owner_id uuid) returns boolean
language sql volatile security definer
set search_path = ''
as $$
  -- owner_id is only a cheap first filter: mood_pending is also an RPC whose row a caller can
  -- make up, so the queued entry's owner is read (only for the rare queued ones).
  select owner_id = (select auth.uid())
     and exists (select 1 from private.tone_analysis_queue q
                  where q.entry_id = tone_analysis_pending.entry_id
                    and exists (select 1 from public.journal_entries e
                                 where e.id = q.entry_id and e.user_id = (select auth.uid())))
$$;
revoke all on function private.tone_analysis_pending(uuid, uuid) from public;
grant execute on function private.tone_analysis_pending(uuid, uuid) to authenticated, service_role;
create or replace function public.mood_pending(entry public.journal_entry_details) returns boolean
language sql volatile
set search_path = ''
as $$ select coalesce(private.tone_analysis_pending(entry.id, entry.user_id), false) $$;
comment on function public.mood_pending(public.journal_entry_details) is
  'Computed field (select=*,mood_pending): true while tone analysis of the entry''s text is queued or running; the owner only.';
grant execute on function public.mood_pending(public.journal_entry_details) to authenticated;

-- Realtime: an entry's owner (and whoever may read its metadata: RLS decides per subscriber)
-- sees its changes, the mood the analysis set among them. Only the metadata table is
-- published: the text is in journal_entry_contents, which is not, so no change carries text.
alter publication supabase_realtime add table public.journal_entries;
