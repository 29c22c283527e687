// GET/PUT /api/user/profile: the caller's own profile (RLS: own row; grants: own columns).
import { Hono } from 'hono'
import { z } from 'zod'
import { badRequest, fromDb } from '../../_shared/errors.ts'
import { readJson } from '../../_shared/validation.ts'
import { type ApiEnv, bearer } from '../credentials.ts'

export const PROFILE_COLUMNS =
  'id, full_name, avatar_url, preferences, role, drops_balance, is_active, is_ai, read_notes_enabled, check_in_enabled, created_at, updated_at'

const ProfilePatch = z.object({
  full_name: z.string({ invalid_type_error: 'full_name must be a string' }).trim()
    .max(200, 'full_name must be at most 200 characters').nullable().optional(),
  avatar_url: z.string({ invalid_type_error: 'avatar_url must be a string' })
    .url('avatar_url must be a URL').max(2048, 'avatar_url must be at most 2048 characters')
    .refine((u) => /^https?:\/\//i.test(u), 'avatar_url must be an http(s) URL').nullable().optional(),
  preferences: z.object({
    theme: z.string({ invalid_type_error: 'theme must be a string' }).min(1).max(50).optional(),
    notifications: z.boolean({ invalid_type_error: 'notifications must be a boolean' }).optional(),
    active_tone_pack_id: z.string().uuid('active_tone_pack_id must be a UUID').nullable().optional(),
  }, { invalid_type_error: 'preferences must be an object' }).strict().optional(),
}).strict()

export const profileRoutes = new Hono<ApiEnv>()
  .get('/user/profile', bearer, async (c) => {
    const { data, error } = await c.var.db.from('profiles').select(PROFILE_COLUMNS)
      .eq('id', c.var.caller.id).single()
    if (error) throw fromDb(error)
    return c.json({ ...data, email: c.var.caller.email })
  })
  .put('/user/profile', bearer, async (c) => {
    const patch = await readJson(c, ProfilePatch)
    if (Object.keys(patch).length === 0) throw badRequest('Nothing to update: send full_name, avatar_url or preferences')
    const { data, error } = await c.var.db.rpc('update_my_profile', { patch }).select(PROFILE_COLUMNS).single()
    if (error) throw fromDb(error)
    return c.json({ ...(data as Record<string, unknown>), email: c.var.caller.email })
  })
