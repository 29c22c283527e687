-- Realtime: private channels only. Broadcast and presence were open to anyone with the anon key
-- on public channels; the project now runs with public access off (hosted: Realtime settings,
-- docs/deploy.md) and this policy lets a signed-in user join only their own channels
-- (`user:<id>[:...]`) to receive row changes. No policy allows sending or presence.
create policy "users join their own channels"
  on realtime.messages for select to authenticated
  using (
    extension = 'broadcast'
    and (
      (select realtime.topic()) = 'user:' || (select auth.uid())::text
      or (select realtime.topic()) like 'user:' || (select auth.uid())::text || ':%'
    )
  );
