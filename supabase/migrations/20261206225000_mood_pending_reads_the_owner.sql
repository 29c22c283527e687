-- mood_pending is also an RPC (its argument a row the caller can make up): whether an entry is
-- queued is told only to the entry's real owner, read from journal_entries.
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
