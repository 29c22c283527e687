-- Realtime Authorization: what a private Realtime channel may carry, decided by policies on
-- realtime.messages (Supabase's private channels). The project is set to private channels only
-- (hosted: Realtime settings, public access off; locally the stand-in's default), so broadcast
-- and presence are closed unless a policy here opens them. Row changes (postgres_changes) are
-- still decided row by row by each table's own RLS; a channel only needs to be joinable.

-- A signed-in user may join the channels named after them (`user:<id>`, or `user:<id>:<anything>`
-- for several at once) to receive their own row changes and what the server broadcasts to them.
-- No policy allows sending (insert) or presence: clients can neither broadcast nor track,
-- so nothing a client puts on a channel ever reaches another person.
create policy "users join their own channels"
  on realtime.messages for select to authenticated
  using (
    extension = 'broadcast'
    and (
      (select realtime.topic()) = 'user:' || (select auth.uid())::text
      or (select realtime.topic()) like 'user:' || (select auth.uid())::text || ':%'
    )
  );
