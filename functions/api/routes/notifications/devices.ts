// Devices that receive push notifications: an Expo push token (the mobile app) or a Web Push
// subscription (the web app). Registered, listed and forgotten with the caller's token, so RLS
// decides; a token registered on another account moves to the caller
// (supabase/schemas/notifications/devices.sql).
// A Web Push endpoint must be a known push service's (web_push.ts), checked here before the
// database's own rule, and again by the sender.
import { z } from '@hono/zod-openapi'
import { notFound, unavailable, unwrap } from '../../../_shared/errors.ts'
import { idParams } from '../../../_shared/validation.ts'
import { vapidConfig, webPushEndpointProblem } from '../../../_shared/web_push.ts'
import { endpoint, Message, routeModule } from '../../openapi.ts'

const tag = 'Notifications'

export const Device = z.object({
  id: z.string(),
  kind: z.enum(['expo', 'web_push']),
  address: z.string().describe('The Expo push token, or the Web Push endpoint'),
  name: z.string().nullable(),
  created_at: z.string(),
  registered_at: z.string(),
  retired_at: z.string().nullable().describe(
    'Set when the provider said the device is gone; registering again clears it',
  ),
}).openapi('NotificationDevice')

const base64url = (field: string, min: number, max: number) =>
  z.string().regex(new RegExp(`^[A-Za-z0-9_-]{${min},${max}}={0,2}$`), `${field}: must be base64url`)

const NewDevice = z.object({
  expo_push_token: z.string().max(300).regex(
    /^Expo(nent)?PushToken\[[A-Za-z0-9_-]{1,200}\]$/,
    'must be an Expo push token (ExponentPushToken[...])',
  )
    .optional().describe('From getExpoPushTokenAsync() in the mobile app'),
  web_push_subscription: z.object({
    endpoint: z.string().max(2048).url().superRefine((endpoint, ctx) => {
      // Only known push services: the sender POSTs to this URL (web_push.ts).
      const problem = webPushEndpointProblem(endpoint)
      if (problem) ctx.addIssue({ code: 'custom', message: problem })
    }).describe(
      'The push service URL the browser gave: https on a known push service (FCM, Mozilla, Apple, WNS; ' +
        'WEB_PUSH_ALLOWED_HOSTS)',
    ),
    expirationTime: z.number().nullable().optional(),
    keys: z.object({ p256dh: base64url('p256dh', 80, 100), auth: base64url('auth', 16, 32) }),
  }).optional().describe(
    'PushSubscription.toJSON() from the browser, made with the key of GET /api/notifications/vapid-public-key',
  ),
  name: z.string().max(100).optional().describe('A label for the user ("Pixel 8", "Firefox at work")'),
}).strict().refine((b) => (b.expo_push_token === undefined) !== (b.web_push_subscription === undefined), {
  message: 'give either expo_push_token or web_push_subscription',
  path: ['expo_push_token'],
})

const COLUMNS = 'id, kind, address, name, created_at, registered_at, retired_at'
const shape = (d: z.infer<typeof Device>) => ({
  id: d.id,
  kind: d.kind,
  address: d.address,
  name: d.name,
  created_at: d.created_at,
  registered_at: d.registered_at,
  retired_at: d.retired_at,
})

export const deviceRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/notifications/devices',
      tag,
      auth: 'bearer',
      body: NewDevice,
      status: 201,
      response: z.object({ device: Device }),
      summary: 'Register a device for push notifications',
      description:
        'Either an Expo push token or a Web Push subscription. Registering the same token again refreshes it ' +
        '(and lifts a retirement); a token registered on another account moves to the caller.',
    }),
    async (c) => {
      const b = c.req.valid('json')
      const sub = b.web_push_subscription
      const device = unwrap(
        await c.var.db.rpc('register_notification_device', {
          kind: sub ? 'web_push' : 'expo',
          address: sub ? sub.endpoint : b.expo_push_token!,
          ...(sub ? { key_p256dh: sub.keys.p256dh, key_auth: sub.keys.auth } : {}),
          ...(b.name !== undefined ? { name: b.name } : {}),
        }),
      )
      return c.json({ device: shape(device as z.infer<typeof Device>) }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/notifications/devices',
      tag,
      auth: 'bearer',
      response: z.object({ devices: z.array(Device) }),
      summary: "The caller's devices, newest first",
    }),
    async (c) => {
      const devices = unwrap(
        await c.var.db.from('notification_devices').select(COLUMNS).order('created_at', { ascending: false })
          .limit(100),
      )
      return c.json({ devices: devices.map((d) => shape(d as z.infer<typeof Device>)) })
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/notifications/devices/{id}',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      response: Message,
      errors: [404],
      summary: "Forget one of the caller's devices",
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const gone = unwrap(await c.var.db.from('notification_devices').delete().eq('id', id).select('id'))
      if (!gone.length) throw notFound('No such device')
      return c.json({ message: 'Device forgotten' })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/notifications/vapid-public-key',
      tag,
      auth: 'none',
      errors: [503],
      response: z.object({ public_key: z.string() }),
      summary: 'The VAPID public key the web app subscribes with',
      description:
        'Pass it as applicationServerKey to pushManager.subscribe(). 503 while Web Push is not configured.',
    }),
    (c) => {
      const vapid = vapidConfig()
      if (!vapid) throw unavailable('Web Push is not configured')
      return c.json({ public_key: vapid.publicKey })
    },
  )
