-- SQL dashboard snippet (super admins): grant or take back drops with a reason.
-- Replace the e-mail, the delta and the reason, then run the whole snippet. The balance
-- moves through the ledger; a delta that would take it below zero is refused.
select t.id, t.amount, t.reason
  from auth.users u, lateral public.admin_adjust_drops(u.id, 25, 'Support: make-good for a failed purchase', 'sql_dashboard') t
 where u.email = 'alice@example.com';

-- The new balance (a second statement: the first cannot see its own trigger's update).
select u.email, p.drops_balance as new_balance,
       (select sum(amount) from public.drops_transactions where user_id = u.id)::integer as ledger_sum
  from auth.users u join public.profiles p on p.id = u.id
 where u.email = 'alice@example.com';
