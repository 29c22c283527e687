-- Labs bench fixture (scripts/bench/labs.ts): 10,000 participants in one active, open
-- competition and a retired competition whose participants the recompute must not touch.
-- Each participant has 0..9 activity events inside the window, as the recording rules make them:
-- on curated public templates of someone else (a super admin gave them a golden spec), at most
-- one clone, completion, build and replication per user and template (the unique index holds
-- them to it), in the order people work: clone, completion, build, replication, then the next
-- template. Idempotent: reruns reuse it.
insert into auth.users (id, email)
select ('b1300000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'bench-labs-' || g || '@example.test'
  from generate_series(1, 10000) g
on conflict do nothing;
insert into auth.users (id, email) values ('b1300000-0000-4000-8000-0000000a0000', 'bench-labs-author@example.test')
on conflict do nothing;

-- Three curated templates by one author: the golden spec is what makes activity on them score.
insert into public.labs_experiments (id, owner_id, title, calculator, inputs, is_template, is_public, predicted_values)
select ('b1300000-0000-4000-8000-00000000e00' || t)::uuid, 'b1300000-0000-4000-8000-0000000a0000', 'Bench template ' || t, 'resonance',
       '{"inductance_h": 0.001, "capacitance_f": 1e-9, "resistance_ohm": 10}', true, true,
       '{"calculator": "resonance", "optimal_inputs": {"inductance_h": 0.001, "capacitance_f": 1e-9, "resistance_ohm": 10},
         "calculator_outputs": {"outputs": [{"label": "Q factor", "value": 100, "unit": ""}]}}'
  from generate_series(1, 3) t
on conflict do nothing;

insert into public.labs_competitions (id, slug, title, starts_at)
values ('b1300000-0000-4000-8000-00000000c0de', 'bench-labs-cup', 'Bench cup', now() - interval '30 days'),
       ('b1300000-0000-4000-8000-00000000dead', 'bench-labs-retired', 'Retired cup', now() - interval '60 days')
on conflict do nothing;
update public.labs_competitions set is_active = false where id = 'b1300000-0000-4000-8000-00000000dead';

insert into public.labs_competition_participants (competition_id, user_id)
select c.id, ('b1300000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid
  from generate_series(1, 10000) g
 cross join (values ('b1300000-0000-4000-8000-00000000c0de'::uuid), ('b1300000-0000-4000-8000-00000000dead'::uuid)) c(id)
on conflict do nothing;

-- Event e of user g: template 1 + (e - 1) / 4, kind (e - 1) % 4; two in three replications confirm.
-- Some fall before the competition's start (up to 40 days back against a 30-day window).
insert into public.labs_activity_events (user_id, kind, template_id, created_at)
select ('b1300000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid,
       case (e - 1) % 4 when 0 then 'clone' when 1 then 'completion' when 2 then 'build'
                        else case when g % 3 = 0 then 'replication_refuted' else 'replication_confirmed' end end,
       ('b1300000-0000-4000-8000-00000000e00' || (1 + (e - 1) / 4))::uuid,
       now() - ((g * 7 + e * 13) % (40 * 24)) * interval '1 hour'
  from generate_series(1, 10000) g
 cross join generate_series(1, 9) e
 where e <= g % 10
   and not exists (select 1 from public.labs_activity_events x where x.user_id = ('b1300000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid)
on conflict do nothing;

analyze public.labs_activity_events;
analyze public.labs_competition_participants;
