// Workout windows (SPEC "the service"): each user's daily 2-hour window, the chains, squads and
// teams built from them every day, photo check-ins and their chips, the daily mosaic, weekly
// battles, and the super admins' review queue and synthetic users. Every rule lives in SQL
// (the workout schema file); a route validates, stores a photo or draws a PNG where needed,
// calls one function with the caller's token and shapes the reply.
import { routeModule } from '../../openapi.ts'
import { aiUserRoutes } from './ai_users.ts'
import { battleRoutes } from './battles.ts'
import { chainRoutes } from './chains.ts'
import { mosaicRoutes } from './mosaic.ts'
import { reviewRoutes } from './review.ts'
import { windowRoutes } from './windows.ts'

// In this order the routes (and the OpenAPI document) read as before the split.
export const workoutRoutes = routeModule()
  .route('/', windowRoutes)
  .route('/', chainRoutes)
  .route('/', mosaicRoutes)
  .route('/', battleRoutes)
  .route('/', reviewRoutes)
  .route('/', aiUserRoutes)
