-- journal_entries joined the supabase_realtime publication (the mood arriving live): like every
-- published table it is closed to an ended impersonation session, since Realtime runs no pre-request.
create policy "journal_entries: nothing for an ended impersonation" on public.journal_entries
  as restrictive for select to authenticated
  using ((select private.impersonation_live()));
comment on policy "journal_entries: nothing for an ended impersonation" on public.journal_entries is
  'Hosted Realtime runs no PostgREST pre-request: a stopped or expired impersonation token is sent no entry change.';
