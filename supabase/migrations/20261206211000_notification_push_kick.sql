-- Issue 38, part 3: a notification is on its way within seconds of its write. Due outbox rows
-- start a sender run at once through pg_net, at most one request per min_interval; the
-- per-minute pg_cron job stays the safety net (docs/notifications.md, "The kick").

-- Rows due now start a sender run at once (one pg_net request to the deliver endpoint, as the
-- pg_cron job makes), instead of waiting for the minute's run. At most one request per
-- `min_interval`, however many rows are written: the row below remembers the last kick, and a
-- writer that finds it recent does nothing, because the kicked run keeps claiming for
-- `linger` after it starts (past the interval), so it takes the rows written meanwhile. The
-- pg_cron job stays the safety net (a failed request, a row committed after the run stopped
-- looking, rows that become due later: quiet hours, backoff, the check-in reminder).
create table private.notification_push_kick (
  id boolean primary key default true check (id),
  enabled boolean not null default true,
  min_interval interval not null default interval '500 milliseconds'
    check (min_interval between interval '0' and interval '1 minute'),
  linger interval not null default interval '1500 milliseconds'
    check (linger between interval '0' and interval '10 seconds'),
  kicked_at timestamptz,
  kicks bigint not null default 0
);
alter table private.notification_push_kick enable row level security;
comment on table private.notification_push_kick is
  'One row: whether writing due outbox rows starts a sender run at once (enabled), at most one request per '
  'min_interval (kicked_at: the last), the run claiming for linger after it starts; kicks counts the requests.';
insert into private.notification_push_kick default values;

create or replace function private.kick_notification_deliveries() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  kick private.notification_push_kick;
  url text;
  secret text;
begin
  if not exists (select 1 from inserted i where i.deliver_after <= now()) then
    return null;
  end if;
  -- A plain read first: at a thousand writes a second nearly every writer stops here, without
  -- a lock on the row.
  select * into kick from private.notification_push_kick k
   where k.enabled and (k.kicked_at is null or k.kicked_at < clock_timestamp() - k.min_interval);
  if not found then
    return null;
  end if;
  -- One writer takes the kick; one that finds the row locked leaves it to that one.
  update private.notification_push_kick k set kicked_at = clock_timestamp(), kicks = k.kicks + 1
   where k.id in (select l.id from private.notification_push_kick l
                   where l.enabled and (l.kicked_at is null or l.kicked_at < clock_timestamp() - l.min_interval)
                     for update skip locked)
  returning * into kick;
  if not found then
    return null;
  end if;
  select s.decrypted_secret into url from vault.decrypted_secrets s where s.name = 'project_url';
  select s.decrypted_secret into secret from vault.decrypted_secrets s where s.name = 'NOTIFICATIONS_CRON_SECRET';
  if url is null or secret is null then
    return null; -- not configured: the pg_cron job (which needs the same) cannot run either
  end if;
  -- Sent when the writer commits (pg_net's queue is a table); never fails the write.
  begin
    perform net.http_post(
      url := url || '/functions/v1/api/notifications/cron/deliver',
      headers := jsonb_build_object('Content-Type', 'application/json', 'x-cron-secret', secret),
      body := jsonb_build_object('kicked_at', kick.kicked_at,
                                 'linger_ms', (extract(epoch from kick.linger) * 1000)::integer),
      timeout_milliseconds := 60000);
  exception when others then
    raise warning 'notification kick: %', sqlerrm;
  end;
  return null;
end
$$;
revoke execute on function private.kick_notification_deliveries() from public;
create trigger notification_deliveries_kick after insert on private.notification_deliveries
  referencing new table as inserted
  for each statement execute function private.kick_notification_deliveries();
