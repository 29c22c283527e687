// The labs optimizer (routes/labs/optimizer.ts) against values worked out by hand.
import { strict as assert } from 'node:assert'
import { api, assertError, test } from './_helpers.ts'
import { single } from './_labs.ts'

const close = (actual: number, expected: number, rel = 1e-6) =>
  assert.ok(Math.abs(actual - expected) <= rel * Math.abs(expected), `${actual} is not ${expected}`)

test('optimizer: each calculator matches values worked out by hand', async () => {
  // Series RLC: Q = (1/10)·√(1e-3/1e-9) = 100; f0 = 1/(2π·1e-6).
  const r = await single('resonance', { inductance_h: 1e-3, capacitance_f: 1e-9, resistance_ohm: 10 })
  close(r.q_factor, 100)
  close(r.resonant_frequency_hz, 159154.943)
  // Parallel RLC: Q = 10000·√(1e-9/1e-3) = 10.
  close(
    (await single('impedance', { resistance_ohm: 10000, inductance_h: 1e-3, capacitance_f: 1e-9 })).q_factor,
    10,
  )
  // Coil 2 in long, 2 in across, 10 turns: Wheeler 1·100/(9+20) µH; Medhurst 5.08·(0.1126+0.08+0.27) pF.
  const coil = await single('coil', { diameter_m: 0.0508, length_m: 0.0508, turns: 10 })
  close(coil.inductance_h, 100 / 29 * 1e-6)
  close(coil.self_capacitance_f, 5.08 * 0.4626e-12)
  close(coil.self_resonant_frequency_hz, 55909352.19, 1e-6)
  // Electrolysis: V = 1.23 + 0.12·log10(0.1/1e-6) + 0.1·0.5/0.5 = 1.93; η = 1.481/1.93.
  close(
    (await single('electrolysis', {
      current_density_a_cm2: 0.1,
      electrode_gap_cm: 0.5,
      electrolyte_conductivity_s_cm: 0.5,
    })).energy_efficiency,
    1.481 / 1.93,
  )
  // Pulsed DC: I0 = 12 A, a = 24.7 A, τ = 1 ms: 24·1e-3·(12 − 24.7·ln(1 + 12/24.7)) / (0.5·1e-3·144).
  const p = await single('pulsed_dc', {
    inductance_h: 1e-3,
    resistance_ohm: 1,
    pulse_width_s: 1,
    clamp_voltage_v: 24,
  })
  close(p.peak_current_a, 12)
  close(p.recovery_efficiency, 0.7398180892543831)
  // Paschen (air, γ = 0.01) at 1 Torr·cm: 365 / (ln 15 − ln ln 101) ≈ 309.66 V.
  close(
    (await single('plasma', { pressure_torr: 1, gap_cm: 1, secondary_emission_coefficient: 0.01 }))
      .breakdown_voltage_v,
    309.65997807972155,
  )
})

test('optimizer: default sweeps are ranked by the objective, within 50,000 combinations, no bearer needed', async () => {
  for (
    const [calculator, objective, goal] of [
      ['resonance', 'q_factor', 'maximize'],
      ['coil', 'self_resonant_frequency_hz', 'maximize'],
      ['impedance', 'q_factor', 'maximize'],
      ['electrolysis', 'energy_efficiency', 'maximize'],
      ['pulsed_dc', 'recovery_efficiency', 'maximize'],
      ['plasma', 'breakdown_voltage_v', 'minimize'],
    ]
  ) {
    const res = await api('/api/labs/optimize', { body: { calculator, top_n: 5 } })
    assert.equal(res.status, 200, calculator)
    assert.equal(res.body.objective, objective)
    assert.equal(res.body.goal, goal)
    assert.ok(
      res.body.combinations <= 50000 && res.body.combinations > 10000,
      `${calculator}: ${res.body.combinations}`,
    )
    const values = res.body.results.map((x: Record<string, number>) => x[objective])
    assert.equal(values.length, 5)
    const sorted = [...values].sort((a, b) => (goal === 'maximize' ? b - a : a - b))
    assert.deepEqual(values, sorted, `${calculator} ranked`)
    assert.deepEqual(res.body.results.map((x: { rank: number }) => x.rank), [1, 2, 3, 4, 5])
  }
  // Paschen's minimum sits at p·d = e·ln(1 + 1/γ)/A: the best result is near it.
  const plasma = await api('/api/labs/optimize', {
    body: {
      calculator: 'plasma',
      top_n: 1,
      ranges: { secondary_emission_coefficient: { min: 0.01, max: 0.01, steps: 1 } },
    },
  })
  const best = plasma.body.results[0]
  close(best.pd_torr_cm, Math.E * Math.log(101) / 15, 0.15)
})

test('optimizer: unknown calculator, bad top_n, too many combinations and bad ranges are 400', async () => {
  assertError(await api('/api/labs/optimize', { body: { calculator: 'warp', top_n: 1 } }), 400, 'calculator')
  assertError(await api('/api/labs/optimize', { body: { calculator: 'coil', top_n: 0 } }), 400, 'top_n')
  assertError(await api('/api/labs/optimize', { body: { calculator: 'coil', top_n: 101 } }), 400, 'top_n')
  assertError(await api('/api/labs/optimize', { body: { calculator: 'coil', top_n: 2.5 } }), 400, 'top_n')
  assertError(await api('/api/labs/optimize', { body: { calculator: 'coil' } }), 400, 'top_n')
  const big = {
    diameter_m: { min: 0.01, max: 0.1, steps: 100 },
    length_m: { min: 0.01, max: 0.1, steps: 100 },
    turns: { min: 5, max: 50, steps: 6 },
  }
  assertError(
    await api('/api/labs/optimize', { body: { calculator: 'coil', top_n: 1, ranges: big } }),
    400,
    '50000',
  )
  assertError(
    await api('/api/labs/optimize', {
      body: { calculator: 'coil', top_n: 1, ranges: { warp_factor: { min: 1, max: 2, steps: 2 } } },
    }),
    400,
    'warp_factor',
  )
  assertError(
    await api('/api/labs/optimize', {
      body: { calculator: 'coil', top_n: 1, ranges: { turns: { min: 5, max: 1, steps: 2 } } },
    }),
    400,
    'turns',
  )
  assertError(
    await api('/api/labs/optimize', {
      body: { calculator: 'coil', top_n: 1, ranges: { turns: { min: 5, max: 1e300, steps: 2 } } },
    }),
    400,
    'ranges.turns.max',
  )
})
