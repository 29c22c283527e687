// Notifications: the inbox (inbox.ts), the devices push goes to (devices.ts), preferences
// (preferences.ts) and the scheduled sender and digest (jobs.ts). What is owed to whom and when
// is decided in SQL (supabase/schemas/notifications/); docs/notifications.md has the rules.
import { routeModule } from '../../openapi.ts'
import { deviceRoutes } from './devices.ts'
import { inboxRoutes } from './inbox.ts'
import { jobRoutes } from './jobs.ts'
import { preferenceRoutes } from './preferences.ts'

export const notificationRoutes = routeModule()
  .route('/', inboxRoutes)
  .route('/', deviceRoutes)
  .route('/', preferenceRoutes)
  .route('/', jobRoutes)
