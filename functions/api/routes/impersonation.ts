// Impersonation (issue 13): not built yet.
import { routeModule } from '../openapi.ts'

export const impersonationRoutes = routeModule()
