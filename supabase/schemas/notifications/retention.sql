-- =============================================================================================
-- Notifications: retention
-- =============================================================================================
-- What pg_cron's notification-retention job prunes, a chunk at a time. The area's overview:
-- notifications/inbox.sql.

-- Read notifications by age (what retention deletes); unread ones are never pruned.
create index notifications_read_by_age on public.notifications (created_at) where read_at is not null;

/*
 * One chunk of pruning: read notifications older than read_days, delivery rows older than
 * delivery_days, devices retired longer than delivery_days. Returns what it deleted and whether
 * more is left (pg_cron runs it every 10 minutes, so a backlog drains a chunk at a time).
 */
create or replace function private.prune_notifications(read_days integer default 90, delivery_days integer default 30,
                                                       chunk integer default 5000)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  n integer := least(greatest(coalesce(chunk, 5000), 1), 100000);
  notifications_deleted integer;
  deliveries_deleted integer;
  devices_deleted integer;
  more boolean;
begin
  if not private.is_trusted_caller() then
    raise exception 'the scheduler, the service role or super admins only' using errcode = '42501';
  end if;
  -- Ids grow with time, so the oldest rows are first in the primary key (no index on created_at
  -- to slow down each notification's insert).
  delete from private.notification_deliveries d
   where d.id in (select o.id from private.notification_deliveries o
                   where o.created_at < now() - make_interval(days => delivery_days)
                   order by o.id limit n);
  get diagnostics deliveries_deleted = row_count;
  delete from public.notifications x
   where x.id in (select o.id from public.notifications o
                   where o.read_at is not null and o.created_at < now() - make_interval(days => read_days)
                   order by o.created_at limit n);
  get diagnostics notifications_deleted = row_count;
  delete from public.notification_devices v
   where v.id in (select o.id from public.notification_devices o
                   where o.retired_at < now() - make_interval(days => delivery_days) limit n);
  get diagnostics devices_deleted = row_count;
  more := deliveries_deleted = n or notifications_deleted = n or devices_deleted = n;
  raise log 'notification retention: % notifications, % deliveries, % devices deleted (more: %)',
    notifications_deleted, deliveries_deleted, devices_deleted, more;
  return jsonb_build_object('notifications', notifications_deleted, 'deliveries', deliveries_deleted,
                            'devices', devices_deleted, 'more', more);
end
$$;
revoke execute on function private.prune_notifications(integer, integer, integer) from public;
grant execute on function private.prune_notifications(integer, integer, integer) to service_role;
comment on function private.prune_notifications(integer, integer, integer) is
  'Retention, one chunk: read notifications older than read_days (90), delivery rows older than delivery_days (30), '
  'devices retired as long. pg_cron: notification-retention, every 10 minutes.';
