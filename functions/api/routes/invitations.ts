// Invitations by e-mail (docs/invitations.md): organization owners and team admins invite an
// address; the invitee follows the e-mailed link and accepts or declines, signed in with that
// address. Every rule is in SQL (supabase/schemas/invitations.sql); this module sends the e-mail
// and never returns the link's token to the inviter.
import { z } from '@hono/zod-openapi'
import type { PostgrestError } from '@supabase/postgrest-js'
import { userDb, type Db } from '../../_shared/db.ts'
import { fromResend, resendClient, sendEmail } from '../../_shared/email.ts'
import { requiredEnv } from '../../_shared/env.ts'
import { fromDb, HttpError, unavailable } from '../../_shared/errors.ts'
import { siteOrigins } from '../../_shared/payments.ts'
import { idParams, uuid } from '../../_shared/validation.ts'
import { endpoint, Message, orNull, routeModule } from '../openapi.ts'

const role = z.enum(['admin', 'member'])
const email = z.email().max(320)
const NewOrganizationInvitation = z.object({ email, role }).strict()
const NewTeamInvitation = z.object({ email, role, add_to_organization: z.boolean().optional() }).strict()

const Invitation = z.object({
  id: z.string(),
  org_id: z.string(),
  team_id: z.string().nullable(),
  email: z.string(),
  role,
  add_to_organization: z.boolean(),
  created_at: z.string(),
  expires_at: z.string(),
}).openapi('Invitation')
const PendingInvitation = Invitation.extend({ invited_by: z.string(), inviter_name: z.string().nullable() })
  .openapi('PendingInvitation')
const InvitationDetails = z.object({
  organization_name: z.string(),
  team_name: z.string().nullable(),
  inviter_name: z.string().nullable(),
  email: z.string(),
  role,
  add_to_organization: z.boolean(),
  expires_at: z.string(),
}).openapi('InvitationDetails')
const Response = z.object({
  status: z.enum(['accepted', 'declined']),
  org_id: z.string(),
  team_id: orNull(z.string()),
  role,
})

const TokenParams = z.object({
  token: z.string().regex(/^[A-Za-z0-9_-]{43}$/, "not an invitation link's token")
    .openapi({ param: { name: 'token', in: 'path' } }),
})
const orgId = idParams('id')
const teamId = idParams('id')
const invitationParams = z.object({
  id: uuid().openapi({ param: { name: 'id', in: 'path' } }),
  invitationId: uuid().openapi({ param: { name: 'invitationId', in: 'path' } }),
})

/** A refusal of the invitation functions; a 429 keeps its Retry-After (in the error's details). */
function invitationError(error: PostgrestError, status?: number): HttpError {
  if (error.code === 'PT429') {
    const seconds = Number(/retry_after_seconds=(\d+)/.exec(error.details ?? '')?.[1])
    return new HttpError(429, error.message, seconds || undefined)
  }
  return fromDb(error, status)
}
function check<T>(reply: { data: T | null; error: PostgrestError | null; status?: number }): T {
  if (reply.error) throw invitationError(reply.error, reply.status)
  return reply.data as T
}

/** Where the e-mailed link opens: the app's page on the first SITE_URL origin. */
function acceptPage(): string {
  const site = siteOrigins()[0]
  if (!resendClient() || !site) {
    throw unavailable('Invitations are not configured (RESEND_API_KEY, EMAIL_FROM and SITE_URL must be set)')
  }
  return `${site}/invitations/accept`
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!)

type Created = { id: string; email: string; role: string; expires_at: string; token: string; team_id: string | null }

/** The e-mail, then the reply; a refused e-mail revokes the invitation it was for. */
async function deliver(db: Db, created: Created, revoke: () => PromiseLike<{ error: PostgrestError | null }>) {
  const details = check(await db.rpc('invitation_details', { token: created.token }))[0]
  const link = `${acceptPage()}?token=${created.token}`
  const into = details.team_name
    ? `the team "${details.team_name}" of ${details.organization_name}`
    : `the organization "${details.organization_name}"`
  const who = details.inviter_name?.trim() || 'Someone'
  const until = new Date(details.expires_at).toUTCString()
  const orgFirst = details.team_name && !details.add_to_organization
    ? ` You need to be a member of ${details.organization_name} to join this team.`
    : ''
  const sent = await sendEmail({
    to: created.email,
    subject: `${who} invited you to ${details.team_name ?? details.organization_name}`,
    text: `${who} invited you to join ${into} as ${created.role}.${orgFirst}\n\n` +
      `Accept or decline: ${link}\n\nThe link works until ${until}. ` +
      `If you have no account yet, sign up with this address (${created.email}) from the link.`,
    html: `<p>${escapeHtml(who)} invited you to join ${escapeHtml(into)} as ${created.role}.${escapeHtml(orgFirst)}</p>` +
      `<p><a href="${escapeHtml(link)}">Accept or decline the invitation</a></p>` +
      `<p>The link works until ${until}. If you have no account yet, sign up with this address ` +
      `(${escapeHtml(created.email)}) from the link.</p>`,
  }, `invitation-${created.id}`).catch((e) => ({ error: { message: String(e) } }))
  if ('error' in sent) {
    await revoke()
    throw fromResend(sent.error)
  }
}

const shape = ({ token: _token, status: _status, ...rest }: Created & Record<string, unknown>) => rest

const tag = 'Invitations'
const created = z.object({ message: z.string(), invitation: Invitation })

export const invitationRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/organizations/{id}/invitations',
      tag,
      auth: 'bearer',
      params: orgId,
      body: NewOrganizationInvitation,
      status: 201,
      response: created,
      errors: [403, 404, 409, 429, 502, 503],
      summary: 'Invite an address into the organization (owners); the link goes by e-mail',
      description: 'The same reply whether or not the address has an account. 409: the address is already a ' +
        'member. A pending invitation to the same address is replaced. 503 (nothing written) without ' +
        'RESEND_API_KEY, EMAIL_FROM and SITE_URL.',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const body = c.req.valid('json')
      acceptPage()
      const row = check(
        await c.var.db.rpc('create_organization_invitation', { target_org: id, email: body.email, role: body.role }),
      )[0] as Created
      await deliver(c.var.db, row, () =>
        c.var.db.rpc('revoke_organization_invitation', { target_org: id, invitation_id: row.id }))
      return c.json({ message: 'Invitation sent', invitation: shape(row) as z.infer<typeof Invitation> }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/teams/{id}/invitations',
      tag,
      auth: 'bearer',
      params: teamId,
      body: NewTeamInvitation,
      status: 201,
      response: created,
      errors: [403, 404, 409, 429, 502, 503],
      summary: 'Invite an address into the team (team admins); the link goes by e-mail',
      description: 'add_to_organization (the organization\'s owner only): accepting also makes the invitee an ' +
        'organization member; without it an invitee who is not one cannot accept. Otherwise as the ' +
        "organization's invitations.",
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const body = c.req.valid('json')
      acceptPage()
      const row = check(
        await c.var.db.rpc('create_team_invitation', {
          target_team: id,
          email: body.email,
          role: body.role,
          add_to_organization: body.add_to_organization ?? false,
        }),
      )[0] as Created
      await deliver(c.var.db, row, () =>
        c.var.db.rpc('revoke_team_invitation', { target_team: id, invitation_id: row.id }))
      return c.json({ message: 'Invitation sent', invitation: shape(row) as z.infer<typeof Invitation> }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/organizations/{id}/invitations',
      tag,
      auth: 'bearer',
      params: orgId,
      response: z.object({ invitations: z.array(PendingInvitation) }),
      errors: [403, 404],
      summary: "The organization's pending invitations (owners)",
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const invitations = check(await c.var.db.rpc('list_organization_invitations', { target_org: id }))
      return c.json({ invitations: invitations as z.infer<typeof PendingInvitation>[] })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/teams/{id}/invitations',
      tag,
      auth: 'bearer',
      params: teamId,
      response: z.object({ invitations: z.array(PendingInvitation) }),
      errors: [403, 404],
      summary: "The team's pending invitations (team admins, the organization's owner)",
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const invitations = check(await c.var.db.rpc('list_team_invitations', { target_team: id }))
      return c.json({ invitations: invitations as z.infer<typeof PendingInvitation>[] })
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/organizations/{id}/invitations/{invitationId}',
      tag,
      auth: 'bearer',
      params: invitationParams,
      response: Message,
      errors: [403, 404, 409],
      summary: 'Revoke a pending invitation (its inviter, owners)',
    }),
    async (c) => {
      const { id, invitationId } = c.req.valid('param')
      check(await c.var.db.rpc('revoke_organization_invitation', { target_org: id, invitation_id: invitationId }))
      return c.json({ message: 'Invitation revoked' })
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/teams/{id}/invitations/{invitationId}',
      tag,
      auth: 'bearer',
      params: invitationParams,
      response: Message,
      errors: [403, 404, 409],
      summary: "Revoke a pending invitation (its inviter, team admins, the organization's owner)",
    }),
    async (c) => {
      const { id, invitationId } = c.req.valid('param')
      check(await c.var.db.rpc('revoke_team_invitation', { target_team: id, invitation_id: invitationId }))
      return c.json({ message: 'Invitation revoked' })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/invitations/{token}',
      tag,
      auth: 'none',
      params: TokenParams,
      response: InvitationDetails,
      errors: [404, 410],
      summary: 'What an invitation link says (anyone holding the token)',
      description: 'What the e-mail said, nothing more (never whether the address has an account). 410 with a ' +
        'sentence for people once expired, revoked, declined or used.',
    }),
    async (c) => {
      const { token } = c.req.valid('param')
      const anon = userDb(requiredEnv('SUPABASE_ANON_KEY'))
      const [details] = check(await anon.rpc('invitation_details', { token }))
      return c.json(details as z.infer<typeof InvitationDetails>)
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/invitations/{token}/accept',
      tag,
      auth: 'bearer',
      params: TokenParams,
      bodyRequired: false,
      response: Response,
      errors: [403, 404, 409, 410],
      summary: 'Accept an invitation (the invitee, signed in with the invited and confirmed address)',
      description: "403 when signed in with another address, an unconfirmed one, or (a team's invitation " +
        'without add_to_organization) when not a member of the organization. The inviter is notified.',
    }),
    async (c) => {
      const { token } = c.req.valid('param')
      const [result] = check(await c.var.db.rpc('accept_invitation', { token }))
      return c.json(result as z.infer<typeof Response>)
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/invitations/{token}/decline',
      tag,
      auth: 'bearer',
      params: TokenParams,
      bodyRequired: false,
      response: Response,
      errors: [403, 404, 410],
      summary: 'Decline an invitation (the invitee, signed in with the invited and confirmed address)',
    }),
    async (c) => {
      const { token } = c.req.valid('param')
      const [result] = check(await c.var.db.rpc('decline_invitation', { token }))
      return c.json(result as z.infer<typeof Response>)
    },
  )
