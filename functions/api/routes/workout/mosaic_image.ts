// The daily mosaic (SPEC Battle and mosaic): one square tile per participant, red team on the
// left, blue on the right, each coloured by team and day status, encoded with fast-png (pure
// JS: image libraries with native binaries do not run in the edge runtime, and decoding every
// check-in photo would exceed its CPU limit).
import { encode } from 'fast-png'

export type TeamColor = 'red' | 'blue'
export type TileStatus = 'completed' | 'failed' | 'pending'

export interface Participant {
  userId: string
  userName: string
  teamColor: TeamColor
  status: TileStatus
}

export interface Section extends Participant {
  coordinates: { x: number; y: number; width: number; height: number }
}

export const TILE = 24
export const GAP = 2
const PANEL_GAP = 8

/** RGB per team and status: completed bright, pending light, failed dark. */
export const TILE_COLORS: Record<TeamColor, Record<TileStatus, [number, number, number]>> = {
  red: { completed: [229, 57, 53], pending: [239, 154, 154], failed: [93, 26, 26] },
  blue: { completed: [30, 136, 229], pending: [144, 202, 249], failed: [13, 42, 77] },
}
export const BACKGROUND: [number, number, number] = [245, 245, 245]

/** Tile positions: each team a grid of the same column count, red first. */
export function layoutMosaic(
  participants: Participant[],
): { width: number; height: number; sections: Section[] } {
  const teams: Record<TeamColor, Participant[]> = {
    red: participants.filter((p) => p.teamColor === 'red'),
    blue: participants.filter((p) => p.teamColor === 'blue'),
  }
  const largest = Math.max(teams.red.length, teams.blue.length, 1)
  const cols = Math.ceil(Math.sqrt(largest))
  const rows = Math.ceil(largest / cols)
  const panelWidth = GAP + cols * (TILE + GAP)
  const sections: Section[] = []
  ;(['red', 'blue'] as const).forEach((team, panel) => {
    const left = panel * (panelWidth + PANEL_GAP)
    teams[team].forEach((p, i) => {
      sections.push({
        ...p,
        coordinates: {
          x: left + GAP + (i % cols) * (TILE + GAP),
          y: GAP + Math.floor(i / cols) * (TILE + GAP),
          width: TILE,
          height: TILE,
        },
      })
    })
  })
  return { width: 2 * panelWidth + PANEL_GAP, height: GAP + rows * (TILE + GAP), sections }
}

/** The PNG of a layout (8-bit RGB). */
export function drawMosaic(layout: { width: number; height: number; sections: Section[] }): Uint8Array {
  const { width, height } = layout
  const data = new Uint8Array(width * height * 3)
  for (let i = 0; i < width * height; i++) data.set(BACKGROUND, i * 3)
  for (const s of layout.sections) {
    const rgb = TILE_COLORS[s.teamColor][s.status]
    const { x, y, width: w, height: h } = s.coordinates
    for (let row = y; row < y + h; row++) {
      for (let col = x; col < x + w; col++) data.set(rgb, (row * width + col) * 3)
    }
  }
  return encode({ width, height, data, depth: 8, channels: 3 })
}
