// What a person reads on their lock screen (and in the e-mail digest) for each notification
// type, built from its payload and the context the outbox adds (the actor's name, the
// recipient's window start), and the deep-link path the app opens when it is tapped.

export interface NotificationForText {
  type: string
  payload: Record<string, unknown>
  context?: { actorName?: string; windowStart?: string } | null
}

export interface NotificationText {
  title: string
  body: string
  /** The app's route for this notification (the client maps it to a screen). */
  path: string
}

const str = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : undefined)
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined)
/** Path segments come from the payload: only ids and dates go in, anything else is left out. */
const seg = (v: unknown) => (typeof v === 'string' && /^[A-Za-z0-9-]{1,64}$/.test(v) ? v : undefined)
const team = (v: unknown) => (v === 'red' ? 'Red' : v === 'blue' ? 'Blue' : undefined)

export function notificationText(n: NotificationForText): NotificationText {
  const p = n.payload ?? {}
  const who = n.context?.actorName ?? 'Someone'
  const at = n.context?.windowStart
  const date = seg(p.date)
  const chain = date ? `/workout/chain/${date}` : '/workout'
  switch (n.type) {
    case 'workout.baton_pass':
      return {
        title: 'Your turn!',
        body: `${who} checked in — your turn!${at ? ` Your window starts at ${at}.` : ''}`,
        path: chain,
      }
    case 'workout.checkin_reminder':
      return {
        title: 'Your workout window starts soon',
        body: `Your window starts${
          at ? ` at ${at}` : ' in 30 minutes'
        }. Check in with a photo to keep the chain going.`,
        path: '/workout/checkin',
      }
    case 'workout.chain_broken':
      return {
        title: 'The chain was broken',
        body: `${who} did not check in before you. Your check-in still counts: start a new chain!`,
        path: chain,
      }
    case 'workout.battle_update': {
      const red = num(p.redTeamChips), blue = num(p.blueTeamChips)
      const leader = p.leader === 'tie'
        ? 'The teams are tied'
        : team(p.leader)
        ? `${team(p.leader)} team leads`
        : 'The battle is on'
      return {
        title: 'Battle update',
        body: `${leader}${
          red !== undefined && blue !== undefined ? ` (Red ${red} chips, Blue ${blue})` : ''
        }.${team(p.yourTeam) ? ` You are on ${team(p.yourTeam)}.` : ''}`,
        path: seg(p.weekStartDate) ? `/workout/battle/${seg(p.weekStartDate)}` : '/workout',
      }
    }
    case 'workout.battle_result': {
      const won = p.winner === 'tie'
        ? 'The battle ended in a tie.'
        : p.winner === p.yourTeam
        ? 'Your team won the battle!'
        : "Your team lost this week's battle."
      return {
        title: 'Battle result',
        body: `${won} See how it went.`,
        path: seg(p.weekStartDate) ? `/workout/battle/${seg(p.weekStartDate)}` : '/workout',
      }
    }
    case 'workout.checkin_rejected':
      return {
        title: 'Check-in not accepted',
        body: `Your check-in${date ? ` of ${date}` : ''} was not accepted${
          str(p.reason) ? `: ${str(p.reason)!.slice(0, 120)}` : '.'
        }`,
        path: chain,
      }
    case 'encouragement.drop_received':
      return {
        title: 'You received a drop',
        body: `${who} sent you an encouragement drop.`,
        path: seg(p.drop_id) ? `/encouragement/drops/${seg(p.drop_id)}` : '/encouragement',
      }
    case 'tone_pack.shared':
      return {
        title: 'A tone pack was shared with you',
        body: `${who} shared ${str(p.pack_name) ? `"${str(p.pack_name)}"` : 'a tone pack'} with you.`,
        path: seg(p.pack_id) ? `/tone-packs/${seg(p.pack_id)}` : '/tone-packs',
      }
    case 'organization.member_added':
      return {
        title: 'You joined an organization',
        body: `${who} added you to ${
          str(p.organization_name) ? `"${str(p.organization_name)}"` : 'an organization'
        }.`,
        path: seg(p.organization_id) ? `/organizations/${seg(p.organization_id)}` : '/organizations',
      }
    case 'organization.ownership_received':
      return {
        title: 'You own an organization now',
        body: `${who} handed you ${
          str(p.organization_name) ? `"${str(p.organization_name)}"` : 'an organization'
        }.`,
        path: seg(p.organization_id) ? `/organizations/${seg(p.organization_id)}` : '/organizations',
      }
    case 'team.member_added':
      return {
        title: 'You joined a team',
        body: `${who} added you to ${str(p.team_name) ? `the team "${str(p.team_name)}"` : 'a team'}.`,
        path: seg(p.team_id) ? `/teams/${seg(p.team_id)}` : '/teams',
      }
    case 'invitation.accepted':
      return {
        title: 'Your invitation was accepted',
        body: `${who} joined ${
          str(p.team_name) ? `the team "${str(p.team_name)}"` : str(p.organization_name) ? `"${str(p.organization_name)}"` : 'your group'
        }.`,
        path: seg(p.team_id) ? `/teams/${seg(p.team_id)}` : seg(p.organization_id) ? `/organizations/${seg(p.organization_id)}` : '/organizations',
      }
    case 'labs.step_prompt':
      return {
        title: 'Your next step',
        body: `Time for the next step of ${str(p.title) ? `"${str(p.title)}"` : 'your experiment'}.`,
        path: seg(p.clone_id) ? `/labs/experiments/${seg(p.clone_id)}` : '/labs',
      }
    default:
      return { title: 'New notification', body: 'You have something new in the app.', path: '/notifications' }
  }
}
