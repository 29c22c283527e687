// CORS as Supabase's API gateway answers it for the services behind it (Auth, Storage,
// Realtime's REST API): any origin (no cookies are involved: the token travels in a header), a
// preflight granted every request header it asks for (the gateway reflects them, so an app's
// own global headers pass too), and the response headers each service's client reads exposed.

export interface GatewayCorsOptions {
  /** Request headers granted when a preflight names none (or names them oddly). */
  allowHeaders: string
  /** Response headers the service's client reads. */
  exposeHeaders?: string
  methods: string
  maxAgeSeconds: number
}

export function gatewayCors(o: GatewayCorsOptions) {
  const headers: Record<string, string> = { 'access-control-allow-origin': '*' }
  if (o.exposeHeaders) headers['access-control-expose-headers'] = o.exposeHeaders

  /** The answer to a preflight (OPTIONS). */
  const preflight = (req: Request) => {
    const asked = req.headers.get('access-control-request-headers')
    // Reflect what was asked when it is a plain list of header names; else the known list.
    const allow = asked && /^[\w-]+(\s*,\s*[\w-]+)*$/.test(asked.trim()) ? asked.trim() : o.allowHeaders
    return new Response(null, {
      status: 204,
      headers: {
        ...headers,
        'access-control-allow-methods': o.methods,
        'access-control-allow-headers': allow,
        'access-control-max-age': String(o.maxAgeSeconds),
      },
    })
  }

  /** Adds the CORS headers every response carries (errors included). */
  const withCors = (res: Response): Response => {
    try {
      for (const [k, v] of Object.entries(headers)) res.headers.set(k, v)
      return res
    } catch {
      // A response with immutable headers: copy it.
      const copy = new Response(res.body, res)
      for (const [k, v] of Object.entries(headers)) copy.headers.set(k, v)
      return copy
    }
  }

  return { headers, preflight, withCors }
}
