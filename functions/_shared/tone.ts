// The seam for tone analysis (SPEC "Tone analysis"): after an entry is written without a
// mood, an analyzer may set one. The AI issue plugs its client in at toneAnalyzer(); until
// an analyzer is configured (AI_API_KEY and a client), analysis is skipped and mood stays null.
export interface ToneResult {
  primaryTone: string
  tones: { tone: string; score: number }[]
  sentiment: string
  confidence: number
}

export interface ToneAnalyzer {
  analyze(input: { title?: string; content: string }): Promise<ToneResult>
}

export const CONFIDENCE_THRESHOLD = 0.5

/** The configured analyzer, or null: none is wired in yet. */
export function toneAnalyzer(): ToneAnalyzer | null {
  return null
}

/** The mood to set, or null: low confidence and any failure leave the mood unset. */
export async function detectMood(analyzer: ToneAnalyzer | null, input: { title?: string; content: string }) {
  if (!analyzer || !input.content.trim()) return null
  try {
    const result = await analyzer.analyze(input)
    return result.confidence > CONFIDENCE_THRESHOLD ? result.primaryTone : null
  } catch (e) {
    console.error('tone analysis failed; the entry is saved without a mood', e)
    return null
  }
}
