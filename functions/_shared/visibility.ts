// The sharing fields of notebooks and entries (SPEC "Visibility rules" 3 and 4).
import { z } from '@hono/zod-openapi'
import { uuid } from './validation.ts'

export const VISIBILITY_LEVELS = ['user', 'team', 'org', 'public'] as const

const level = () => z.enum(VISIBILITY_LEVELS)

export const sharingFields = {
  metadata_visibility: level().optional(),
  content_visibility: level().optional(),
  team_id: uuid().nullable().optional(),
  org_id: uuid().nullable().optional(),
}

type Sharing = {
  metadata_visibility?: string
  content_visibility?: string
  team_id?: string | null
  org_id?: string | null
}

/** A team level needs team_id, an org level org_id (checked again by the database). */
export function requireSharingTargets(v: Sharing, ctx: z.RefinementCtx) {
  const levels = [v.metadata_visibility, v.content_visibility]
  if (levels.includes('team') && !v.team_id) {
    ctx.addIssue({ code: 'custom', path: ['team_id'], message: 'required when a visibility is team' })
  }
  if (levels.includes('org') && !v.org_id) {
    ctx.addIssue({ code: 'custom', path: ['org_id'], message: 'required when a visibility is org' })
  }
}
