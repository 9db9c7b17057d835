// Package classic simulates Gymnasium's classic-control environments
// Pendulum-v1, CartPole-v1 and Acrobot-v1 in float64, step for step as
// Gymnasium's Python code computes them, behind the envs.Env interface, plus
// the per-client physical perturbations of the paper's appendix "Setups".
//
// The simulators are hand-written rather than taken from a library because no
// Go port reproduces Gymnasium's arithmetic order (which matters for 1e-9
// agreement over hundreds of steps of a chaotic system such as Acrobot) and
// because the paper needs physical parameters (damping, torque scales,
// observation noise) that Gymnasium does not expose. Each Step follows the
// upstream expression order operation by operation; the files cite the
// upstream source they transcribe.
//
// Every environment is wrapped in its TimeLimit (200 steps for Pendulum-v1,
// 500 for CartPole-v1 and Acrobot-v1): Step reports truncated once the
// episode's step count reaches the limit, exactly like gymnasium.wrappers.TimeLimit.
//
// Differences from Gymnasium, all deliberate and documented:
//   - Observations are float64 (Gymnasium casts them to float32); the internal
//     state is float64 in both.
//   - Reset draws the initial state from the same distribution as Gymnasium but
//     from a math/rand/v2 PCG source, so the bits differ from numpy's for the
//     same seed. Acrobot's reset state is rounded to float32, as Gymnasium does.
//   - Step after termination or truncation panics (envs.Env calls it a
//     programmer error) instead of Gymnasium's warning.
//   - Optional extras that default to off and leave the defaults bit-identical
//     to Gymnasium: Pendulum damping and torque scale, Acrobot torque scale and
//     goal threshold, Gaussian observation noise. The Acrobot goal test is
//     Gymnasium's −cos θ1 − cos(θ1+θ2) > 1 and ignores the link lengths.
//
// # Agreement with Gymnasium
//
// The tests replay golden trajectories made by testdata/gymnasium_reference.py,
// a numpy transcription of Gymnasium's step functions (see testdata/README.md),
// open loop to 1e-9 per coordinate over 200 steps or to the episode's end, and
// every step of every golden episode in isolation to 1e-12. Bit-for-bit
// agreement is not possible: Go's math.Sin and math.Cos differ from the C
// library's in the last bit for about a quarter of arguments, and numpy's own
// float64 sin/cos depend on the CPU (SVML kernels on AVX-512 machines, up to
// 3 ulp), so Gymnasium does not agree with itself across machines either.
// Chaotic motions (Acrobot, bang-bang CartPole) amplify such last-bit
// differences to 1e-9 after a few hundred steps.
//
// The package does not render, does not implement the Box2D environments
// (LunarLander is not simulated yet), and knows nothing of learning or fusion.
package classic
