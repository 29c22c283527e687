// Admin users, conversion rates and role changes (issue 7): not built yet.
import { routeModule } from '../openapi.ts'

export const adminUserRoutes = routeModule()
