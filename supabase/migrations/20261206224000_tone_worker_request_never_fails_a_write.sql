-- Asking for the tone worker never fails the journal write that asks: without project_url or
-- CHAT_CRON_SECRET in Vault it asks nothing (as the push kick), and a failing request is a warning.
create or replace function private.request_tone_worker() returns void
language plpgsql security definer
set search_path = ''
as $$
declare
  url text;
  secret text;
begin
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
