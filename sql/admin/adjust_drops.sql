-- SQL dashboard snippet (super admins): grant or take back drops with a reason.
-- Replace the e-mail, the delta and the reason, then run the whole snippet. The balance
-- moves through the ledger; a delta that would take it below zero is refused.
select t.id, t.user_id, t.amount, t.reason, p.drops_balance as new_balance
from auth.users u,
     lateral public.admin_adjust_drops(u.id, 25, 'Support: make-good for a failed purchase', 'sql_dashboard') t
     join public.profiles p on p.id = t.user_id
where u.email = 'alice@example.com';
