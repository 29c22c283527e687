-- The sponsor outreach cap under concurrency: eight
-- sessions send to one sponsor at the same moment, each as the same signed-in user through
-- public.labs_send_sponsor_message; exactly five get through and three are refused with PT429.
--
-- The sessions are dblink connections, which only see committed rows, so the fixture is
-- committed through a ninth connection and removed at the end.
begin;
create extension if not exists pgtap with schema extensions;
create extension if not exists dblink with schema extensions;

select plan(4);

select extensions.dblink_connect('labs_setup', format('host=127.0.0.1 port=%s dbname=%s user=postgres password=postgres',
                                                      current_setting('port'), current_database()));
select extensions.dblink_exec('labs_setup', $setup$
  select private.new_auth_user(to_jsonb(u)) from (values
    ('13130000-0000-4000-8000-00000000e001', 'pgtap-labs-race-owner@example.test'),
    ('13130000-0000-4000-8000-00000000e002', 'pgtap-labs-race-sender@example.test')) u (id, email)
   where not exists (select 1 from auth.users a where a.id = u.id::uuid);
  insert into public.labs_sponsors (id, name, tier, status)
  values ('13130000-0000-4000-8000-00000000e0a1', 'Race Co', 'gold', 'approved')
  on conflict do nothing;
  insert into private.labs_sponsor_private (sponsor_id, applicant_id, contact_email, contact_name)
  values ('13130000-0000-4000-8000-00000000e0a1', '13130000-0000-4000-8000-00000000e001', 'race@example.test', 'Race')
  on conflict do nothing;
  delete from public.labs_sponsor_messages where sponsor_id = '13130000-0000-4000-8000-00000000e0a1';
$setup$);

-- Eight sessions, each signed in as the sender, each holding its transaction open until all
-- have sent (so the calls really overlap), then committing.
create function pg_temp.open_racers(n integer) returns void language plpgsql as $$
declare i integer;
begin
  for i in 1..n loop
    perform extensions.dblink_connect('labs_racer_' || i, format('host=127.0.0.1 port=%s dbname=%s user=postgres password=postgres',
                                                                 current_setting('port'), current_database()));
    perform extensions.dblink_exec('labs_racer_' || i, $s$
      begin;
      select set_config('request.jwt.claims', '{"sub": "13130000-0000-4000-8000-00000000e002", "role": "authenticated"}', true);
      set local role authenticated;
    $s$);
  end loop;
  for i in 1..n loop
    perform extensions.dblink_send_query('labs_racer_' || i, $q$
      select public.labs_send_sponsor_message('13130000-0000-4000-8000-00000000e0a1', 'race')
    $q$);
  end loop;
end $$;

-- Each racer's outcome: 'sent', or the SQLSTATE it was refused with. Results are taken as they
-- come (a racer waiting for another's lock is busy until that one commits), for at most 20 s.
create function pg_temp.collect(n integer) returns table (racer integer, outcome text) language plpgsql as $$
declare
  i integer;
  pending integer[] := array(select generate_series(1, n));
  deadline timestamptz := clock_timestamp() + interval '20 seconds';
  conn text;
begin
  while cardinality(pending) > 0 and clock_timestamp() < deadline loop
    foreach i in array pending loop
      conn := 'labs_racer_' || i;
      continue when extensions.dblink_is_busy(conn) = 1;
      begin
        perform * from extensions.dblink_get_result(conn, true) as t(m text);
        perform * from extensions.dblink_get_result(conn, false) as t(m text);
        perform extensions.dblink_exec(conn, 'commit');
        outcome := 'sent';
      exception when others then
        outcome := sqlstate;
        perform * from extensions.dblink_get_result(conn, false) as t(m text);
        perform extensions.dblink_exec(conn, 'rollback');
      end;
      racer := i;
      return next;
      perform extensions.dblink_disconnect(conn);
      pending := array_remove(pending, i);
    end loop;
    perform pg_sleep(0.01);
  end loop;
  foreach i in array pending loop
    perform extensions.dblink_disconnect('labs_racer_' || i);
    racer := i;
    outcome := 'timed out';
    return next;
  end loop;
end $$;

select pg_temp.open_racers(8);
create temp table outcomes as select * from pg_temp.collect(8);

select is((select count(*) from outcomes where outcome = 'sent'), 5::bigint, 'five of eight simultaneous messages get through');
select is((select count(*) from outcomes where outcome = 'PT429'), 3::bigint, 'the other three are refused with PT429 (429)');
select is((select count(*)::bigint from extensions.dblink('labs_setup',
            'select 1 from public.labs_sponsor_messages where sponsor_id = ''13130000-0000-4000-8000-00000000e0a1''') as t(x integer)),
          5::bigint, 'exactly five messages are stored');

select extensions.dblink_exec('labs_setup', $cleanup$
  delete from public.labs_sponsor_messages where sponsor_id = '13130000-0000-4000-8000-00000000e0a1';
  delete from public.labs_sponsors where id = '13130000-0000-4000-8000-00000000e0a1';
  delete from auth.users where id in ('13130000-0000-4000-8000-00000000e001', '13130000-0000-4000-8000-00000000e002');
$cleanup$);
select is((select count(*)::bigint from extensions.dblink('labs_setup',
            'select 1 from public.labs_sponsors where id = ''13130000-0000-4000-8000-00000000e0a1''') as t(x integer)),
          0::bigint, 'the committed fixture is removed');
select extensions.dblink_disconnect('labs_setup');

select * from finish();
rollback;
