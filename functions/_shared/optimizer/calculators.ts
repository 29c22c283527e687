// The six labs calculators (SPEC "Experiment-community admin": default objectives), each a
// textbook physical model over named parameters with default sweep ranges. Pure functions:
// `objective` runs once per grid point (so it takes a flat array and allocates nothing);
// `details` adds secondary figures for the few results that are returned.

export interface ParameterRange {
  min: number
  max: number
  steps: number
  /** log: points spaced evenly in log10 (for values spanning decades, like L and C). */
  scale?: 'linear' | 'log'
}

export interface Calculator {
  /** The objective's name in every result (says what it is, with its unit). */
  objective: string
  goal: 'maximize' | 'minimize'
  /** Parameter names in the order `objective` reads them, with their default ranges. */
  parameters: Record<string, ParameterRange>
  /** The objective at one point, or NaN where the model does not apply (skipped). */
  evaluate(v: Float64Array): number
  details(v: Float64Array): Record<string, number>
}

const TWO_PI = 2 * Math.PI
const resonantFrequency = (l: number, c: number) => 1 / (TWO_PI * Math.sqrt(l * c))

// Series RLC circuit: Q = (1/R)·√(L/C); resonance at f0 = 1/(2π√(LC)).
const resonance: Calculator = {
  objective: 'q_factor',
  goal: 'maximize',
  parameters: {
    inductance_h: { min: 1e-6, max: 1e-2, steps: 50, scale: 'log' },
    capacitance_f: { min: 1e-12, max: 1e-6, steps: 40, scale: 'log' },
    resistance_ohm: { min: 0.1, max: 100, steps: 25, scale: 'log' },
  },
  evaluate: (v) => Math.sqrt(v[0] / v[1]) / v[2],
  details: (v) => ({ resonant_frequency_hz: resonantFrequency(v[0], v[1]) }),
}

// Parallel RLC tank (the impedance calculator): Q = R·√(C/L); characteristic impedance √(L/C).
const impedance: Calculator = {
  objective: 'q_factor',
  goal: 'maximize',
  parameters: {
    resistance_ohm: { min: 100, max: 1e6, steps: 25, scale: 'log' },
    inductance_h: { min: 1e-6, max: 1e-2, steps: 50, scale: 'log' },
    capacitance_f: { min: 1e-12, max: 1e-6, steps: 40, scale: 'log' },
  },
  evaluate: (v) => v[0] * Math.sqrt(v[2] / v[1]),
  details: (v) => ({
    resonant_frequency_hz: resonantFrequency(v[1], v[2]),
    characteristic_impedance_ohm: Math.sqrt(v[1] / v[2]),
  }),
}

// Single-layer air-core solenoid. Inductance by Wheeler's formula, L[µH] = r²N²/(9r + 10ℓ)
// with radius r and length ℓ in inches; self-capacitance by Medhurst's fit,
// C[pF] = D[cm]·(0.1126·ℓ/D + 0.08 + 0.27·√(D/ℓ)); self-resonance f = 1/(2π√(L·C)).
const INCH = 0.0254
function coilInductance(diameter: number, length: number, turns: number) {
  const r = diameter / 2 / INCH
  return (r * r * turns * turns) / (9 * r + 10 * (length / INCH)) * 1e-6
}
function coilCapacitance(diameter: number, length: number) {
  const dCm = diameter * 100
  return dCm * (0.1126 * (length / diameter) + 0.08 + 0.27 * Math.sqrt(diameter / length)) * 1e-12
}
const coil: Calculator = {
  objective: 'self_resonant_frequency_hz',
  goal: 'maximize',
  parameters: {
    diameter_m: { min: 0.01, max: 0.2, steps: 40 },
    length_m: { min: 0.01, max: 0.5, steps: 50 },
    turns: { min: 5, max: 500, steps: 25 },
  },
  evaluate: (v) => resonantFrequency(coilInductance(v[0], v[1], v[2]), coilCapacitance(v[0], v[1])),
  details: (v) => ({
    inductance_h: coilInductance(v[0], v[1], v[2]),
    self_capacitance_f: coilCapacitance(v[0], v[1]),
  }),
}

// Water electrolysis cell: V = E_rev + b·log10(j/j0) + j·gap/κ (reversible voltage 1.23 V,
// combined Tafel slope b = 0.12 V/decade, exchange current density j0 = 1e-6 A/cm², ohmic drop
// across the electrolyte gap). Energy efficiency against the higher heating value:
// η = 1.481 V / V (capped at 1).
export const ELECTROLYSIS = {
  reversibleV: 1.23,
  tafelSlopeV: 0.12,
  exchangeCurrentAcm2: 1e-6,
  thermoneutralV: 1.481,
}
function cellVoltage(j: number, gapCm: number, kappa: number) {
  const e = ELECTROLYSIS
  return e.reversibleV + e.tafelSlopeV * Math.log10(j / e.exchangeCurrentAcm2) + (j * gapCm) / kappa
}
const electrolysis: Calculator = {
  objective: 'energy_efficiency',
  goal: 'maximize',
  parameters: {
    current_density_a_cm2: { min: 0.01, max: 1, steps: 50, scale: 'log' },
    electrode_gap_cm: { min: 0.1, max: 2, steps: 40 },
    electrolyte_conductivity_s_cm: { min: 0.1, max: 1, steps: 25 },
  },
  evaluate: (v) => Math.min(1, ELECTROLYSIS.thermoneutralV / cellVoltage(v[0], v[1], v[2])),
  details: (v) => ({ cell_voltage_v: cellVoltage(v[0], v[1], v[2]) }),
}

// Pulsed DC drive of an inductor with energy recovery through a diode into a clamp. During the
// pulse the current rises to I0 = (Vs/R)·(1 − e^(−R·t/L)), storing ½·L·I0². At turn-off it
// freewheels into the clamp: L·di/dt = −(Vc + Vf + i·R), so with a = (Vc + Vf)/R and τ = L/R the
// charge delivered is τ·(I0 − a·ln(1 + I0/a)) and the energy recovered Vc·τ·(I0 − a·ln(1 + I0/a)).
// Recovery efficiency = recovered / stored (→ Vc/(Vc + Vf) as R → 0).
// Indexed reads, not destructuring: destructuring a typed array runs its iterator per point.
function peakCurrent(v: Float64Array) {
  const l = v[0], r = v[1], t = v[2], vs = v[4]
  return (vs / r) * -Math.expm1((-r * t) / l)
}
function recoveryEfficiency(v: Float64Array) {
  const l = v[0], r = v[1], vc = v[3], vf = v[5]
  const i0 = peakCurrent(v)
  if (!(i0 > 0)) return NaN
  const a = (vc + vf) / r
  const x = i0 / a
  // a·(x − ln(1+x)) loses every digit for small x: use its series there.
  const gap = x < 1e-4 ? a * x * x * (0.5 - x / 3 + (x * x) / 4) : i0 - a * Math.log1p(x)
  return (vc * (l / r) * gap) / (0.5 * l * i0 * i0)
}
const pulsedDc: Calculator = {
  objective: 'recovery_efficiency',
  goal: 'maximize',
  parameters: {
    inductance_h: { min: 1e-4, max: 1e-1, steps: 20, scale: 'log' },
    resistance_ohm: { min: 0.1, max: 10, steps: 20, scale: 'log' },
    pulse_width_s: { min: 1e-5, max: 1e-2, steps: 25, scale: 'log' },
    clamp_voltage_v: { min: 5, max: 100, steps: 5 },
    supply_voltage_v: { min: 12, max: 12, steps: 1 },
    diode_forward_voltage_v: { min: 0.7, max: 0.7, steps: 1 },
  },
  evaluate: recoveryEfficiency,
  details: (v) => {
    const i0 = peakCurrent(v)
    return { peak_current_a: i0, stored_energy_j: 0.5 * v[0] * i0 * i0 }
  },
}

// Gas breakdown by Paschen's law: V = B·p·d / (ln(A·p·d) − ln(ln(1 + 1/γ))), with the gas
// constants of air, A = 15 /(cm·Torr) and B = 365 V/(cm·Torr). Where the denominator is not
// positive (p·d left of the Paschen curve's asymptote) there is no breakdown: skipped.
export const PASCHEN_AIR = { a: 15, b: 365 }
function breakdownVoltage(v: Float64Array) {
  const pd = v[0] * v[1]
  const denominator = Math.log(PASCHEN_AIR.a * pd) - Math.log(Math.log1p(1 / v[2]))
  return denominator > 0 ? (PASCHEN_AIR.b * pd) / denominator : NaN
}
const plasma: Calculator = {
  objective: 'breakdown_voltage_v',
  goal: 'minimize',
  parameters: {
    pressure_torr: { min: 0.1, max: 100, steps: 50, scale: 'log' },
    gap_cm: { min: 0.05, max: 5, steps: 50, scale: 'log' },
    secondary_emission_coefficient: { min: 0.001, max: 0.2, steps: 20, scale: 'log' },
  },
  evaluate: breakdownVoltage,
  details: (v) => ({ pd_torr_cm: v[0] * v[1] }),
}

export const CALCULATORS: Record<string, Calculator> = {
  resonance,
  coil,
  impedance,
  electrolysis,
  pulsed_dc: pulsedDc,
  plasma,
}
export const CALCULATOR_NAMES = Object.keys(CALCULATORS) as [string, ...string[]]
