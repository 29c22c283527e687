-- Local stacks only (dev and tests), never a hosted project: the database accepts Web Push
-- endpoints on loopback (http://127.0.0.1:<port>/..., the tests' fake push service), which
-- private.web_push_endpoint_problem otherwise refuses. The api calls them only with
-- WEB_PUSH_ALLOW_LOOPBACK=true as well (docs/notifications.md).
do $$
begin
  execute format('alter database %I set app.web_push_allow_loopback = %L', current_database(), 'on');
end
$$;
