// Payments (issue 9): not built yet.
import { routeModule } from '../openapi.ts'

export const paymentRoutes = routeModule()
