// E-mail out and in (issue 9): not built yet.
import { routeModule } from '../openapi.ts'

export const emailRoutes = routeModule()
