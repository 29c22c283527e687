// Note analysis (issue 10): not built yet.
import { routeModule } from '../openapi.ts'

export const chatRoutes = routeModule()
