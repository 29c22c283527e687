// A local server that speaks Expo's push API as expo-server-sdk calls it (EXPO_BASE_URL):
// POST /--/api/v2/push/send (bearer access token, JSON or gzip, an array of messages; answers
// {data: [ticket]}) and POST /--/api/v2/push/getReceipts ({ids} -> {data: {id: receipt}}).
// Errors use Expo's body {errors: [{code, message}]}; 429 carries Retry-After.
//
// Behaviour by token (so test files do not interfere):
//   ExponentPushToken[gone-...]         ticket error DeviceNotRegistered
//   ExponentPushToken[receiptgone-...]  ticket ok, its receipt error DeviceNotRegistered
// Control (tests only):
//   GET  /__control/messages?token=<token>       messages accepted for that token
//   POST /__control/fail {token, status, times}  the next requests carrying that token fail
export interface ExpoFakeOptions {
  /** Added to every answer (the bench: 50 ms). */
  latencyMs?: number
  /** Keep only counts per notification (the bench), not the messages. */
  countOnly?: boolean
}

export interface ExpoFake {
  env: Record<string, string>
  stop(): Promise<void>
  /** notification_id|token -> how many times it was accepted. */
  counts: Map<string, number>
  /** notification_id|token -> when (epoch ms) the request that first carried it had been read. */
  arrivals: Map<string, number>
}

export function start(options: ExpoFakeOptions = {}): Promise<ExpoFake> {
  const accessToken = `expo-test-${crypto.randomUUID()}`
  const messages = new Map<string, Record<string, unknown>[]>()
  const counts = new Map<string, number>()
  const arrivals = new Map<string, number>()
  const failures = new Map<string, { status: number; times: number }>()
  const receipts = new Map<string, Record<string, unknown>>()
  const error = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
    Response.json({ errors: [{ code, message }] }, { status, headers })

  const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url)
    if (url.pathname === '/__control/messages') {
      return Response.json(messages.get(url.searchParams.get('token') ?? '') ?? [])
    }
    if (url.pathname === '/__control/fail') {
      const b = await req.json()
      failures.set(b.token, { status: b.status, times: b.times ?? 1 })
      return Response.json({ ok: true })
    }
    if (req.headers.get('authorization') !== `Bearer ${accessToken}`) {
      return error(401, 'UNAUTHORIZED', 'The bearer token is invalid; check your Expo access token.')
    }
    let raw: string
    if (req.headers.get('content-encoding') === 'gzip') {
      raw = await new Response(req.body!.pipeThrough(new DecompressionStream('gzip'))).text()
    } else raw = await req.text()
    const arrived = Date.now()
    let body: any
    try {
      body = JSON.parse(raw)
    } catch {
      return error(400, 'VALIDATION_ERROR', 'The request body is not JSON.')
    }
    if (options.latencyMs) await new Promise((r) => setTimeout(r, options.latencyMs))

    if (req.method === 'POST' && url.pathname === '/--/api/v2/push/getReceipts') {
      const ids: string[] = Array.isArray(body?.ids) ? body.ids : []
      if (ids.length > 1000) {
        return error(400, 'PUSH_TOO_MANY_RECEIPTS', 'You are trying to get more than 1000 receipts.')
      }
      return Response.json({
        data: Object.fromEntries(ids.filter((id) => receipts.has(id)).map((id) => [id, receipts.get(id)])),
      })
    }
    if (req.method !== 'POST' || url.pathname !== '/--/api/v2/push/send') {
      return error(404, 'NOT_FOUND', 'Not found')
    }

    const list: Record<string, any>[] = Array.isArray(body) ? body : [body]
    if (list.length > 100) {
      return error(
        400,
        'PUSH_TOO_MANY_NOTIFICATIONS',
        'You are trying to send more than 100 push notifications in one request.',
      )
    }
    for (const m of list) {
      const failure = failures.get(m.to)
      if (failure && failure.times > 0) {
        failure.times--
        return failure.status === 429
          ? error(429, 'RATE_LIMIT_EXCEEDED', 'Too many requests.', { 'retry-after': '1' })
          : error(failure.status, 'INTERNAL_SERVER_ERROR', 'An unknown error occurred.')
      }
    }
    const tickets = list.map((m) => {
      const token = String(m.to)
      if (!/^Expo(nent)?PushToken\[.+\]$/.test(token)) {
        return {
          status: 'error',
          message: `"${token}" is not a valid Expo push token`,
          details: { error: 'DeviceNotRegistered', expoPushToken: token },
        }
      }
      if (token.startsWith('ExponentPushToken[gone-')) {
        return {
          status: 'error',
          message: `"${token}" is not a registered push notification recipient`,
          details: { error: 'DeviceNotRegistered', expoPushToken: token },
        }
      }
      const key = `${m.data?.notification_id}|${token}`
      counts.set(key, (counts.get(key) ?? 0) + 1)
      if (!arrivals.has(key)) arrivals.set(key, arrived)
      if (!options.countOnly) {
        const list = messages.get(token) ?? []
        list.push(m)
        messages.set(token, list)
      }
      const id = crypto.randomUUID()
      if (!options.countOnly) {
        receipts.set(
          id,
          token.startsWith('ExponentPushToken[receiptgone-')
            ? {
              status: 'error',
              message: 'The device cannot receive push notifications anymore',
              details: { error: 'DeviceNotRegistered', expoPushToken: token },
            }
            : { status: 'ok' },
        )
      }
      return { status: 'ok', id }
    })
    return Response.json({ data: tickets })
  })

  return Promise.resolve({
    env: {
      EXPO_ACCESS_TOKEN: accessToken,
      EXPO_BASE_URL: `http://127.0.0.1:${server.addr.port}`,
      EXPO_RETRY_MIN_TIMEOUT_MS: '50',
      EXPO_FAKE_URL: `http://127.0.0.1:${server.addr.port}`,
    },
    counts,
    arrivals,
    stop: () => server.shutdown(),
  })
}
