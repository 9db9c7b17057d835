package bipedal

import (
	"fmt"
	"math"
	"strings"

	"github.com/fedirl/fedirl/pkg/envs"
)

// Params are the walker's physics and Gymnasium's make kwargs. The
// defaults are Gymnasium's; the others exist for a fleet of walkers of
// different build (ClientParams).
type Params struct {
	// Hardcore adds stumps, stairs and pits to the terrain.
	Hardcore bool
	// MotorsTorque is the largest torque of each of the four motors (N·m), in (0, 200] [80].
	MotorsTorque float64
	// LegLength is the length of a thigh and of a shin in Gymnasium's pixel units (30 a metre), in [20, 50] [34].
	LegLength float64
	// Friction is the ground's friction coefficient, in (0, 10] [2.5].
	Friction float64
	// HullDensity is the hull's density (kg/m²), in (0, 20] [5].
	HullDensity float64
	// Gravity is the vertical gravity (m/s²), in [−20, −1] [−10].
	Gravity float64
	// TerrainRoughness scales the grass's random slope changes, in [0, 3] [1]; 0 gives flat grass.
	TerrainRoughness float64
	// MaxEpisodeSteps is the TimeLimit [1600; 2000 for BipedalWalkerHardcore-v3].
	MaxEpisodeSteps int
}

// DefaultParams returns Gymnasium's BipedalWalker-v3 (hardcore false) or
// BipedalWalkerHardcore-v3.
func DefaultParams(hardcore bool) Params {
	p := Params{Hardcore: hardcore, MotorsTorque: motorsTorque, LegLength: legHPx, Friction: friction,
		HullDensity: 5, Gravity: -10, TerrainRoughness: 1, MaxEpisodeSteps: 1600}
	if hardcore {
		p.MaxEpisodeSteps = 2000
	}
	return p
}

// ClientParams returns client i's walker (0 ≤ i ≤ envs.MaxClient): each
// physical parameter linear in d = i − 5, so that client 5 is Gymnasium's
// walker and clients 0 and 10 are the extremes (see ClientDoc).
func ClientParams(hardcore bool, i int) Params {
	p := DefaultParams(hardcore)
	d := float64(i - 5)
	p.MotorsTorque = motorsTorque * (1 + 0.02*d)
	p.LegLength = legHPx * (1 + 0.01*d)
	p.Friction = friction * (1 + 0.08*d)
	p.HullDensity = 5 * (1 + 0.02*d)
	p.Gravity = -10 * (1 + 0.01*d)
	p.TerrainRoughness = 1 + 0.1*d
	return p
}

// ClientDoc documents the fleet.
const ClientDoc = "client i (d = i − 5; client 5 is Gymnasium's walker): motors_torque 80·(1 + 0.02d), leg_length 34·(1 + 0.01d), friction 2.5·(1 + 0.08d), hull_density 5·(1 + 0.02d), gravity −10·(1 + 0.01d), terrain_roughness 1 + 0.1d"

// paramRanges are the meaningful ranges, one place for Validate and ParamInfo.
var paramRanges = []struct {
	name     string
	lo, hi   float64
	openLo   bool
	get      func(*Params) *float64
	doc      string
	defaultV float64
}{
	{"motors_torque", 0, 200, true, func(p *Params) *float64 { return &p.MotorsTorque }, "largest torque of each motor (N·m)", motorsTorque},
	{"leg_length", 20, 50, false, func(p *Params) *float64 { return &p.LegLength }, "length of a thigh and of a shin (pixels, 30 a metre)", legHPx},
	{"friction", 0, 10, true, func(p *Params) *float64 { return &p.Friction }, "ground friction coefficient", friction},
	{"hull_density", 0, 20, true, func(p *Params) *float64 { return &p.HullDensity }, "hull density (kg/m²)", 5},
	{"gravity", -20, -1, false, func(p *Params) *float64 { return &p.Gravity }, "vertical gravity (m/s²)", -10},
	{"terrain_roughness", 0, 3, false, func(p *Params) *float64 { return &p.TerrainRoughness }, "scale of the grass's random slope changes (0: flat)", 1},
}

func rangeText(lo, hi float64, openLo bool) string {
	if openLo {
		return fmt.Sprintf("(%v, %v]", lo, hi)
	}
	return fmt.Sprintf("[%v, %v]", lo, hi)
}

// Validate returns an error naming the first parameter outside its range.
func (p Params) Validate() error {
	for _, r := range paramRanges {
		v := *r.get(&p)
		if math.IsNaN(v) || v > r.hi || v < r.lo || (r.openLo && v == r.lo) {
			return fmt.Errorf("bipedal: %s %v must be in %s", r.name, v, rangeText(r.lo, r.hi, r.openLo))
		}
	}
	if p.MaxEpisodeSteps < 1 {
		return fmt.Errorf("bipedal: max_episode_steps %d must be ≥ 1", p.MaxEpisodeSteps)
	}
	return nil
}

// Names lists the registered ids.
func Names() []string { return []string{"BipedalWalker-v3", "BipedalWalkerHardcore-v3"} }

// Info describes one parameter: its name, Gymnasium's default and meaning.
type Info struct {
	Name, Doc string
	Default   float64
}

// ParamInfo lists the parameters accepted by Make, in a stable order.
func ParamInfo() []Info {
	out := []Info{{"hardcore", "1 adds stumps, stairs and pits (Gymnasium's hardcore=True), 0 off", 0}}
	for _, r := range paramRanges {
		out = append(out, Info{r.name, r.doc + ", in " + rangeText(r.lo, r.hi, r.openLo), r.defaultV})
	}
	return append(out, Info{"max_episode_steps", "TimeLimit: the episode is truncated after this many steps (2000 for BipedalWalkerHardcore-v3)", 1600})
}

// Make returns the environment name with params overriding the defaults
// (client ≥ 0: client i's physics are the base).
func Make(name string, client int, params map[string]float64) (*Env, error) {
	var hardcore bool
	switch name {
	case "BipedalWalkerHardcore-v3":
		hardcore = true
	case "BipedalWalker-v3":
	default:
		return nil, fmt.Errorf("bipedal: unknown environment %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if v, ok := params["hardcore"]; ok {
		if v != 0 && v != 1 {
			return nil, fmt.Errorf("bipedal: hardcore = %v, want 0 or 1", v)
		}
		hardcore = hardcore || v == 1
		if name == "BipedalWalkerHardcore-v3" && v == 0 {
			return nil, fmt.Errorf("bipedal: hardcore = 0 contradicts %s", name)
		}
	}
	p := DefaultParams(hardcore)
	if name == "BipedalWalker-v3" {
		p.MaxEpisodeSteps = 1600 // make("BipedalWalker-v3", hardcore=True) keeps its TimeLimit
	}
	if client >= 0 {
		if err := envs.CheckClient(client); err != nil {
			return nil, err
		}
		steps := p.MaxEpisodeSteps
		p = ClientParams(hardcore, client)
		p.MaxEpisodeSteps = steps
	}
	for k, v := range params {
		switch k {
		case "hardcore":
		case "max_episode_steps":
			if v != math.Trunc(v) || v < 1 || v > 1e9 {
				return nil, fmt.Errorf("bipedal: max_episode_steps = %v, want a positive integer", v)
			}
			p.MaxEpisodeSteps = int(v)
		default:
			found := false
			for _, r := range paramRanges {
				if r.name == k {
					*r.get(&p), found = v, true
				}
			}
			if !found {
				var known []string
				for _, in := range ParamInfo() {
					known = append(known, in.Name)
				}
				return nil, fmt.Errorf("bipedal: %s has no parameter %q (known: %s)", name, k, strings.Join(known, ", "))
			}
		}
	}
	e, err := New(p)
	if err != nil {
		return nil, err
	}
	if hardcore && name == "BipedalWalkerHardcore-v3" {
		e.name = name
	}
	return e, nil
}
