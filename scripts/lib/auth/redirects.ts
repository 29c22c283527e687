// Where Auth may send the browser after a link: GoTrue's IsRedirectURLValid
// (internal/utilities/request.go). Allowed are site_url's scheme, host and port (any port on a
// localhost host, RFC 8252), a loopback address, and an entry of additional_redirect_urls as
// a glob (gobwas/glob with '.' and '/' as separators: * stays within a host label or path
// segment, ** crosses them) matched against the whole URL without its fragment. Anything else
// falls back to site_url, so a link never hands a session to another site or scheme.
// The URL is read as Go's url.Parse reads it (the raw host, not the browser's normalized one),
// so a host written as a number ("http://2130706433/") is refused as GoTrue refuses it.
import type { AuthContext } from './sessions.ts'

interface RawUrl {
  scheme: string // lower case, as Go's url.Parse leaves it
  hostname: string // without IPv6 brackets
  port: string // "" when the URL names none
}

function parseRaw(url: string): RawUrl | null {
  const m = url.match(/^([a-zA-Z][a-zA-Z0-9+.-]*):(.*)$/s)
  if (!m) return null
  try {
    new URL(url) // what a browser could not follow is no redirect
  } catch {
    return null
  }
  const scheme = m[1].toLowerCase()
  if (!m[2].startsWith('//')) return { scheme, hostname: '', port: '' }
  const authority = m[2].slice(2).split(/[/?#]/, 1)[0]
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1)
  const v6 = hostPort.match(/^\[([^\]]*)\](?::(\d*))?$/)
  if (v6) return { scheme, hostname: v6[1], port: v6[2] ?? '' }
  const [hostname, port = '', extra] = hostPort.split(':')
  if (extra !== undefined || !/^\d*$/.test(port)) return null
  return { scheme, hostname, port }
}

const isLocalhost = (hostname: string) => {
  const h = hostname.toLowerCase()
  return ['localhost', '127.0.0.1', '::1', '0.0.0.0', '::'].includes(h) || h.endsWith('.localhost')
}

/** Go's net.ParseIP + IsLoopback for the literal forms it accepts; null when not an IP. */
function ipIsLoopback(hostname: string): boolean | null {
  const v4 = hostname.match(/^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/)
  if (v4) {
    const parts = v4.slice(1)
    if (parts.some((p) => Number(p) > 255 || (p.length > 1 && p.startsWith('0')))) return null
    return parts[0] === '127'
  }
  if (!hostname.includes(':')) return null
  let normalized: string
  try {
    normalized = new URL(`http://[${hostname}]/`).hostname
  } catch {
    return null
  }
  return normalized === '[::1]' || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(normalized)
}

function globToRegExp(pattern: string): RegExp {
  let out = ''
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]
    if (c === '*' && pattern[i + 1] === '*') {
      out += '.*'
      i++
    } else if (c === '*') out += '[^/.]*'
    else if (c === '?') out += '[^/.]'
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&')
  }
  return new RegExp(`^${out}$`, 's')
}

export function isRedirectAllowed(ctx: AuthContext, url: string): boolean {
  if (typeof url !== 'string' || !url) return false
  const target = parseRaw(url)
  const site = parseRaw(ctx.config.siteUrl)
  if (!target || !site) return false
  if (
    target.hostname === site.hostname && target.scheme === site.scheme &&
    (target.port === site.port || isLocalhost(target.hostname))
  ) return true
  const http = target.scheme === 'http' || target.scheme === 'https'
  if (/^[0-9]+$/.test(target.hostname)) return false // an IPv4 address as one number
  const loopback = ipIsLoopback(target.hostname)
  // GoTrue allows any scheme to a loopback address; here only http(s), so no custom or
  // javascript: scheme passes on the strength of a host (a local-only tightening).
  if (loopback !== null) return loopback && http
  if (http && !/^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?$/.test(target.hostname)) return false
  const withoutFragment = url.split('#', 1)[0]
  return ctx.config.additionalRedirectUrls.some((p) => globToRegExp(p).test(withoutFragment))
}

/** The redirect_to a request asked for, if allowed, else site_url. */
export function redirectTarget(ctx: AuthContext, asked: unknown): string {
  return typeof asked === 'string' && asked && isRedirectAllowed(ctx, asked) ? asked : ctx.config.siteUrl
}
