// Encouragement drops and badges (SPEC "Encouragement drops and badges", rules 1-4). Every
// rule lives in SQL (the encouragement schema file): the send is one function that locks the
// day's allowance; engagement processing is one set-based function; badges are recalculated by
// one function. Routes validate, call the database as the caller, and shape.
import { routeModule } from '../../openapi.ts'
import { adminRoutes } from './admin.ts'
import { badgeRoutes } from './badges.ts'
import { dropRoutes } from './drops.ts'
import { scheduledRoutes } from './scheduled.ts'

// In this order the routes (and the OpenAPI document) read as before the split.
export const encouragementRoutes = routeModule()
  .route('/', dropRoutes)
  .route('/', adminRoutes)
  .route('/', scheduledRoutes)
  .route('/', badgeRoutes)
