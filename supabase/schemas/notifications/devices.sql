-- =============================================================================================
-- Notifications: devices
-- =============================================================================================
-- A user's Expo and Web Push devices, one owner per token or endpoint, and the rules for their
-- addresses (routes/notifications/devices.ts). The area's overview: notifications/inbox.sql.

create table public.notification_devices (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null default auth.uid() references public.profiles (id) on delete cascade,
  kind text not null check (kind in ('expo', 'web_push')),
  address text not null check (char_length(address) between 1 and 2048),
  key_p256dh text check (key_p256dh ~ '^[A-Za-z0-9_-]{80,100}={0,2}$'),
  key_auth text check (key_auth ~ '^[A-Za-z0-9_-]{16,32}={0,2}$'),
  name text check (char_length(name) <= 100),
  created_at timestamptz not null default now(),
  registered_at timestamptz not null default now(),
  retired_at timestamptz,
  retired_reason text check (char_length(retired_reason) <= 500),
  unique (kind, address),
  check ((kind = 'web_push') = (key_p256dh is not null and key_auth is not null))
);
alter table public.notification_devices enable row level security;
comment on table public.notification_devices is
  'Where a user''s push notifications go: an Expo push token (kind expo) or a Web Push subscription (kind '
  'web_push: endpoint in address, its p256dh and auth keys). A token or endpoint belongs to one user at a time: '
  'registering it on another account moves it.';
comment on column public.notification_devices.address is
  'The Expo push token (ExponentPushToken[...]) or the Web Push subscription''s endpoint URL.';
comment on column public.notification_devices.retired_at is
  'When the provider said the device is gone (Expo DeviceNotRegistered, Web Push 404/410): nothing more is sent '
  'to it until it is registered again.';
revoke all on public.notification_devices from anon, authenticated, service_role;
grant select, delete on public.notification_devices to authenticated, service_role;
grant insert (kind, address, key_p256dh, key_auth, name) on public.notification_devices to authenticated;
grant update (key_p256dh, key_auth, name) on public.notification_devices to authenticated;

-- A user's devices (the outbox trigger, the list, the foreign key).
create index notification_devices_by_owner on public.notification_devices (user_id);

create policy "notification_devices: owners read" on public.notification_devices
  for select to authenticated using (user_id = (select auth.uid()));
create policy "notification_devices: owners add" on public.notification_devices
  for insert to authenticated with check (user_id = (select auth.uid()));
create policy "notification_devices: owners update" on public.notification_devices
  for update to authenticated using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
create policy "notification_devices: owners forget" on public.notification_devices
  for delete to authenticated using (user_id = (select auth.uid()));

-- Why a Web Push endpoint may not be stored (null: it may). The endpoint is the client's choice
-- and the sender POSTs to it, so an address naming this machine, a private network or a bare IP
-- would let a subscription make the api call it (SSRF). What SQL can know: https, no user name or
-- password, no port but 443, a host name ending in a letter-led top-level label (so no IP literal
-- in any notation, no single-label name like localhost or metadata), none of the local-only
-- suffixes. Which push services are allowed is the api's configuration (WEB_PUSH_ALLOWED_HOSTS),
-- checked at registration through /api and again before each send (functions/_shared/web_push.ts).
-- Loopback (127.0.0.1, localhost, [::1], http or https) only where the database is told so:
-- app.web_push_allow_loopback = on, set by sql/local for the local stacks (the tests' fake push
-- service), never on a hosted project.
create or replace function private.web_push_endpoint_problem(address text) returns text
language plpgsql stable
set search_path = ''
as $$
declare
  authority text := substring(address from '^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)');
  host text := lower(regexp_replace(coalesce(authority, ''), ':[0-9]*$', ''));
begin
  if address is null or address !~ '^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\s]+([/?#]\S*)?$' then
    return 'must be an https URL (the subscription''s endpoint)';
  end if;
  if authority ~ '@' then
    return 'must not carry a user name or password';
  end if;
  if host in ('127.0.0.1', 'localhost', '[::1]')
     and coalesce(current_setting('app.web_push_allow_loopback', true), '') = 'on' then
    return null;
  end if;
  if lower(address) !~ '^https://' then
    return 'must be an https URL (the subscription''s endpoint)';
  end if;
  if authority ~ ':[0-9]*$' and authority !~ ':443$' then
    return 'must not name a port (push services listen on 443)';
  end if;
  if host !~ '^[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z][a-z0-9-]*$' then
    return 'must name a push service by its host name (no IP address, no local name)';
  end if;
  if host ~ '\.(localhost|local|localdomain|internal|intranet|lan|home\.arpa)$' then
    return 'must be a push service on the internet, not this machine or a local network';
  end if;
  return null;
end
$$;
comment on function private.web_push_endpoint_problem(text) is
  'Why a Web Push endpoint is refused (null: accepted): https, no credentials, no port but 443, a host name (no IP '
  'literal, no local name). Loopback only with app.web_push_allow_loopback = on (local stacks).';
-- The field-rules trigger runs as the writer.
grant execute on function private.web_push_endpoint_problem(text) to authenticated, service_role;

-- The columns' rules in words (conventions.sql, "Field rules in words").
create or replace function private.check_notification_device_fields() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  problem text;
begin
  perform private.check_required('kind', new.kind);
  perform private.check_one_of('kind', new.kind, array['expo', 'web_push']);
  perform private.check_required('address', new.address);
  if new.kind = 'expo' and new.address !~ '^Expo(nent)?PushToken\[[A-Za-z0-9_-]{1,200}\]$' then
    raise exception 'address: must be an Expo push token (ExponentPushToken[...])' using errcode = '23514';
  end if;
  if new.kind = 'web_push' then
    -- The endpoint is chosen by the client and called by the sender: see web_push_endpoint_problem.
    problem := private.web_push_endpoint_problem(new.address);
    if problem is not null then
      raise exception 'address: %', problem using errcode = '23514';
    end if;
    perform private.check_max_length('address', new.address, 2048);
    perform private.check_required('key_p256dh', new.key_p256dh);
    perform private.check_required('key_auth', new.key_auth);
    if new.key_p256dh !~ '^[A-Za-z0-9_-]{80,100}={0,2}$' then
      raise exception 'key_p256dh: must be the subscription''s p256dh key (base64url)' using errcode = '23514';
    end if;
    if new.key_auth !~ '^[A-Za-z0-9_-]{16,32}={0,2}$' then
      raise exception 'key_auth: must be the subscription''s auth secret (base64url)' using errcode = '23514';
    end if;
  elsif new.key_p256dh is not null or new.key_auth is not null then
    raise exception 'key_p256dh: only a web_push device has keys' using errcode = '23514';
  end if;
  perform private.check_max_length('name', new.name, 100);
  return new;
end
$$;
create trigger notification_devices_check_fields
  before insert or update of kind, address, key_p256dh, key_auth, name on public.notification_devices
  for each row execute function private.check_notification_device_fields();

-- A token or endpoint registered on another account moves: the other account's row goes first
-- (it runs before the unique check, so the insert, or an upsert's update, then succeeds).
create or replace function private.move_notification_device() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  delete from public.notification_devices d
   where d.kind = new.kind and d.address = new.address and d.user_id <> new.user_id;
  return new;
end
$$;
create trigger notification_devices_move before insert on public.notification_devices
  for each row execute function private.move_notification_device();

-- At most 10 devices a user (phones and browsers; retired ones count until re-registered or
-- deleted): each device multiplies every push, so an unbounded list would let one account turn the
-- sender into a relay. Refreshing a device the user already has is not a new one.
create or replace function private.limit_notification_devices() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  if not exists (select 1 from public.notification_devices d
                  where d.kind = new.kind and d.address = new.address and d.user_id = new.user_id)
     and (select count(*) from public.notification_devices d where d.user_id = new.user_id) >= 10 then
    raise exception 'address: at most 10 devices a user; delete one first' using errcode = '23514';
  end if;
  return new;
end
$$;
create trigger notification_devices_per_user_limit before insert on public.notification_devices
  for each row execute function private.limit_notification_devices();

-- A user with no signed-in session left gets no more pushes: when the last of their sessions
-- ends (signing out everywhere, signing out of the only device, an account deletion request,
-- which ends them all), their devices are forgotten. A device is not tied to one session: a
-- sign-out on one device while others stay signed in leaves every device registered, so the
-- app DELETEs its own before signing out (docs/notifications.md).
create or replace function private.forget_devices_without_sessions() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  delete from public.notification_devices d
   where d.user_id in (select distinct e.user_id from ended e)
     and not exists (select 1 from auth.sessions s where s.user_id = d.user_id);
  return null;
end
$$;
create trigger sessions_forget_notification_devices after delete on auth.sessions
  referencing old table as ended
  for each statement execute function private.forget_devices_without_sessions();

-- RPC: registers (or refreshes) one of the caller's devices; registering again un-retires it.
create or replace function public.register_notification_device(
  kind text, address text, key_p256dh text default null, key_auth text default null, name text default null)
returns public.notification_devices
language sql security invoker
set search_path = ''
as $$
  insert into public.notification_devices as d (kind, address, key_p256dh, key_auth, name)
  values (register_notification_device.kind, register_notification_device.address,
          register_notification_device.key_p256dh, register_notification_device.key_auth,
          register_notification_device.name)
  on conflict (kind, address) do update
     set key_p256dh = excluded.key_p256dh, key_auth = excluded.key_auth,
         name = coalesce(excluded.name, d.name)
  returning *
$$;
comment on function public.register_notification_device(text, text, text, text, text) is
  'Adds the caller''s device (kind expo: address = the Expo push token; kind web_push: the endpoint and its keys). '
  'The same token on another account moves here; the caller''s own is refreshed and sent to again.';
grant execute on function public.register_notification_device(text, text, text, text, text) to authenticated;

-- Registering again (the upsert's update, which always sets the keys) refreshes the
-- registration and lifts a retirement; renaming a device does not.
create or replace function private.refresh_notification_device() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.registered_at := now();
  new.retired_at := null;
  new.retired_reason := null;
  return new;
end
$$;
create trigger notification_devices_refresh before update of key_p256dh, key_auth on public.notification_devices
  for each row execute function private.refresh_notification_device();
