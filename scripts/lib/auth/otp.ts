// One-time codes as GoTrue makes them: a numeric code (e-mailed as {{ .Token }}) whose
// hash, sha224(email + code) in hex, is stored in the user's token column and sent in links
// as {{ .TokenHash }}.
import { createHash } from 'node:crypto'

export function generateOtp(length: number): string {
  let out = ''
  while (out.length < length) {
    for (const b of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (b < 250 && out.length < length) out += String(b % 10)
    }
  }
  return out
}

export const tokenHash = (email: string, otp: string) =>
  createHash('sha224').update(email + otp).digest('hex')

/** A fresh code and its hash for an address. */
export function newOtp(email: string, length: number) {
  const otp = generateOtp(length)
  return { otp, hash: tokenHash(email, otp) }
}
