-- =============================================================================================
-- Notifications: the inbox
-- =============================================================================================
-- A general inbox: one row per recipient and event, written only by security definer SQL
-- (private.notify) when something happens to a user that they did not do themselves (added
-- to an organization or a team, handed its ownership, ...). Recipients read theirs and mark
-- them read.
--
-- The rows reach people through three channels: Expo push (the mobile app's
-- ExponentPushToken[...]), Web Push (a browser's subscription: endpoint and keys) and a daily
-- e-mail digest. Sending is the api's job (functions/api/routes/notifications/push_delivery.ts
-- and digest.ts); what is owed, to whom and when is decided here:
--   public.notification_devices      a user's devices (one owner per token or endpoint)
--   public.notification_preferences  per type and channel on/off, quiet hours, daily cap, digest
--   private.notification_deliveries  the outbox: one row per notification and device, written by
--                                    a trigger in the transaction that writes the notification
--   private.notification_digests     each user's digest state and unsubscribe token
-- The sender claims chunks (for update skip locked) and records each outcome; retention prunes.
--
-- The area is split as its routes are (functions/api/routes/notifications/), loaded in this
-- order (supabase/config.toml, schema_paths): inbox, devices, preferences, push_delivery,
-- digest, retention.

create table public.notifications (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references public.profiles (id) on delete cascade,
  type text not null check (char_length(type) <= 100 and type ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$'),
  payload jsonb not null default '{}'::jsonb check (jsonb_typeof(payload) = 'object' and pg_column_size(payload) <= 8192),
  created_at timestamptz not null default now(),
  read_at timestamptz
);
alter table public.notifications enable row level security;
comment on table public.notifications is
  'Things a user is told: one row per recipient and event. Written only by security definer SQL '
  '(private.notify); recipients read theirs and mark them read. Reused by later features '
  '(workout baton pass, check-in reminders, labs step prompts).';
comment on column public.notifications.type is
  'What happened, as area.event (organization.member_added, team.member_added, organization.ownership_received, ...).';
comment on column public.notifications.payload is
  'The event''s details (ids and names the recipient may see), a JSON object of at most 8 KB.';
comment on column public.notifications.read_at is 'When the recipient marked it read; null while unread.';
revoke all on public.notifications from anon, authenticated, service_role;
grant select on public.notifications to authenticated, service_role;
grant update (read_at)
  on public.notifications to authenticated;

-- The inbox, newest first (and the foreign key).
create index notifications_inbox on public.notifications (user_id, created_at desc, id desc);
-- Realtime pushes each new notification to its recipient (the supabase_realtime publication is
-- the platform's; Realtime checks each change against the subscriber's RLS before sending it).
-- Every table in it also gets impersonation.sql's restrictive policy (Realtime runs no pre-request).
alter publication supabase_realtime add table public.notifications;
create policy "notifications: recipients read their own" on public.notifications
  for select to authenticated
  using (user_id = (select auth.uid()));
create policy "notifications: recipients mark their own read" on public.notifications
  for update to authenticated
  using (user_id = (select auth.uid()))
  with check (user_id = (select auth.uid()));
comment on policy "notifications: recipients mark their own read" on public.notifications is
  'Only read_at is granted; private.stamp_notification_read sets its value.';

-- Marking read records the server's time (the first one), whatever time the client sent;
-- setting null marks it unread again.
create or replace function private.stamp_notification_read() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if new.read_at is not null then
    new.read_at := coalesce(old.read_at, now());
  end if;
  return new;
end
$$;
create trigger notifications_stamp_read before update of read_at on public.notifications
  for each row execute function private.stamp_notification_read();

-- The one writer: security definer SQL (triggers, jobs) calls it; no client role may. The same
-- notification (type and payload) still unread from the last day is not written again, so a
-- loop of share/unshare or add/remove cannot flood someone's inbox, phone or daily push cap.
create or replace function private.notify(recipient uuid, kind text, details jsonb default '{}'::jsonb)
returns uuid
language sql security definer
set search_path = ''
as $$
  insert into public.notifications (user_id, type, payload)
  select recipient, kind, coalesce(details, '{}'::jsonb)
   where not exists (select 1 from public.notifications n
                      where n.user_id = recipient and n.created_at > now() - interval '1 day'
                        and n.read_at is null and n.type = kind and n.payload = coalesce(details, '{}'::jsonb))
  returning id
$$;
comment on function private.notify(uuid, text, jsonb) is
  'Adds a notification for one user (null when the same one is still unread from the last day). Call it from '
  'security definer SQL; it is granted to no client role.';

-- RPC: mark some (or all) of the caller's notifications read; returns how many changed.
create or replace function public.mark_notifications_read(notification_ids uuid[] default null)
returns integer
language sql security invoker
set search_path = ''
as $$
  with marked as (
    update public.notifications set read_at = now()
     where user_id = (select auth.uid())
       and read_at is null
       and (notification_ids is null or id = any (notification_ids))
    returning 1
  )
  select count(*)::integer from marked
$$;
comment on function public.mark_notifications_read(uuid[]) is
  'Marks the caller''s notifications read (the given ids, or all when null); returns how many were unread.';
grant execute on function public.mark_notifications_read(uuid[]) to authenticated;
