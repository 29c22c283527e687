// Listening history (issue 12): not built yet.
import { routeModule } from '../openapi.ts'

export const musicRoutes = routeModule()
