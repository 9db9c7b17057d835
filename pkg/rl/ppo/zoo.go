package ppo

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ApplyConfig overlays a YAML (or JSON) hyperparameter file on base and
// returns the result. The file is a mapping of either
//
//   - Config's own keys (stable-baselines3's PPO argument names: n_steps,
//     batch_size, learning_rate, …, plus total_steps, hidden, activation,
//     normalize_obs, …), or
//   - an RL Baselines3 Zoo entry exactly as rl-zoo3's hyperparams/ppo.yml
//     writes it: n_timesteps (→ total_steps), policy ('MlpPolicy'),
//     normalize (true, false or "{'norm_obs': …, 'norm_reward': …}"),
//     learning_rate and clip_range as numbers or "lin_<x>" schedules,
//     normalize_advantage, use_sde and sde_sample_freq (gSDE), and
//     policy_kwargs "dict(…)" with log_std_init,
//     ortho_init, activation_fn (nn.Tanh, nn.ReLU) and net_arch (a list of
//     widths, or dict(pi=…, vf=…) with equal pi and vf).
//
// The entry may stand alone or under its environment id (then env selects
// it, so a copy of the zoo's whole ppo.yml works too). Every key is honoured
// or refused: the error names each key that cannot be honoured and why
// (e.g. an env_wrapper, or policy_kwargs' squash_output), and an explicit 0
// that Config would read as "the default" is refused rather than replaced.
func ApplyConfig(base Config, data []byte, env string) (Config, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		return base, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return base, fmt.Errorf("want a mapping of hyperparameters")
	}
	m := doc.Content[0]
	if sub := mappingValue(m, env); sub != nil && sub.Kind == yaml.MappingNode {
		m = sub // the entry under its environment id
	} else if len(m.Content) > 0 && allMappings(m) {
		var ids []string
		for i := 0; i < len(m.Content); i += 2 {
			ids = append(ids, m.Content[i].Value)
		}
		return base, fmt.Errorf("no entry for %s (entries: %s)", env, strings.Join(ids, ", "))
	}
	c := base
	var refused []string
	refuse := func(key *yaml.Node, format string, a ...any) {
		refused = append(refused, fmt.Sprintf("line %d: %s: %s", key.Line, key.Value, fmt.Sprintf(format, a...)))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		name := k.Value
		if seen[name] {
			refuse(k, "given twice")
			continue
		}
		seen[name] = true
		if dst, ok := c.intField(name); ok {
			n, err := decodeInt(v)
			switch {
			case err != nil:
				refuse(k, "%v", err)
			case n <= 0:
				refuse(k, "%d; want ≥ 1", n)
			default:
				*dst = n
			}
			continue
		}
		if dst, ok := c.floatField(name); ok {
			var x float64
			if err := v.Decode(&x); err != nil {
				refuse(k, "want a number, got %q", v.Value)
			} else if x == 0 && name != "ent_coef" && name != "log_std_init" {
				refuse(k, "0 would be read as the default (%s); give a non-zero value or leave the key out", defaultText(name))
			} else {
				*dst = x
			}
			continue
		}
		if dst, ok := c.boolField(name); ok {
			if err := v.Decode(dst); err != nil {
				refuse(k, "want true or false, got %q", v.Value)
			}
			continue
		}
		switch name {
		case "n_timesteps", "total_steps":
			if seen["n_timesteps"] && seen["total_steps"] {
				refuse(k, "both n_timesteps and total_steps given")
				continue
			}
			n, err := decodeInt(v)
			if err != nil {
				refuse(k, "%v", err)
			} else if n <= 0 {
				refuse(k, "%d; want ≥ 1", n)
			} else {
				c.TotalSteps = n
			}
		case "learning_rate", "clip_range":
			x, lin, err := decodeSchedule(v)
			switch {
			case err != nil:
				refuse(k, "%v", err)
			case !(x > 0):
				refuse(k, "%g; want > 0", x)
			case name == "learning_rate":
				c.LearningRate, c.LinearLR = x, lin
			default:
				c.ClipRange, c.LinearClip = x, lin
			}
		case "policy":
			if v.Value != "MlpPolicy" {
				refuse(k, "%q; only MlpPolicy (separate actor and critic MLPs) is implemented", v.Value)
			}
		case "normalize":
			obs, rew, err := decodeNormalize(v)
			if err != nil {
				refuse(k, "%v", err)
			} else {
				c.NormalizeObs, c.NormalizeReward = obs, rew
			}
		case "normalize_advantage":
			var b bool
			if err := v.Decode(&b); err != nil {
				refuse(k, "want true or false, got %q", v.Value)
			} else {
				c.NoAdvantageNorm = !b
			}
		case "hidden":
			var h []int
			if err := v.Decode(&h); err != nil || len(h) == 0 {
				refuse(k, "want a non-empty list of widths")
			} else {
				c.Hidden = h
			}
		case "activation":
			c.Activation = v.Value
		case "policy_kwargs":
			if err := c.applyPolicyKwargs(v.Value); err != nil {
				refuse(k, "%v", err)
			}
		case "use_sde":
			if err := v.Decode(&c.UseSDE); err != nil {
				refuse(k, "want true or false, got %q", v.Value)
			}
		case "sde_sample_freq":
			n, err := decodeInt(v)
			if err != nil {
				refuse(k, "%v", err)
			} else if n < -1 {
				refuse(k, "%d; want ≥ -1 (-1: only at the start of each rollout)", n)
			} else {
				c.SDESampleFreq = n
			}
		default:
			refuse(k, "unknown key (not a stable-baselines3 PPO argument or RL Zoo key that fedirl implements)")
		}
	}
	if len(refused) > 0 {
		return base, fmt.Errorf("keys that cannot be honoured:\n  %s", strings.Join(refused, "\n  "))
	}
	return c, nil
}

func (c *Config) intField(name string) (*int, bool) {
	switch name {
	case "n_envs":
		return &c.NEnvs, true
	case "n_steps":
		return &c.NSteps, true
	case "batch_size":
		return &c.BatchSize, true
	case "n_epochs":
		return &c.NEpochs, true
	}
	return nil, false
}

func (c *Config) floatField(name string) (*float64, bool) {
	switch name {
	case "gamma":
		return &c.Gamma, true
	case "gae_lambda":
		return &c.GAELambda, true
	case "ent_coef":
		return &c.EntCoef, true
	case "vf_coef":
		return &c.VFCoef, true
	case "max_grad_norm":
		return &c.MaxGradNorm, true
	case "clip_obs":
		return &c.ClipObs, true
	case "clip_reward":
		return &c.ClipReward, true
	case "log_std_init":
		return &c.LogStdInit, true
	case "adam_eps":
		return &c.AdamEps, true
	}
	return nil, false
}

func (c *Config) boolField(name string) (*bool, bool) {
	switch name {
	case "linear_lr":
		return &c.LinearLR, true
	case "linear_clip":
		return &c.LinearClip, true
	case "no_advantage_norm":
		return &c.NoAdvantageNorm, true
	case "normalize_obs":
		return &c.NormalizeObs, true
	case "normalize_reward":
		return &c.NormalizeReward, true
	case "no_ortho_init":
		return &c.NoOrthoInit, true
	}
	return nil, false
}

// defaultText names the default that a zero would silently select.
func defaultText(name string) string {
	d := Config{}.WithDefaults()
	if p, ok := d.floatField(name); ok {
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	return "?"
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func allMappings(m *yaml.Node) bool {
	for i := 1; i < len(m.Content); i += 2 {
		if m.Content[i].Kind != yaml.MappingNode {
			return false
		}
	}
	return true
}

// decodeInt reads an integer written as an integer or as a float with an
// integral value (the zoo's "!!float 1e5").
func decodeInt(v *yaml.Node) (int, error) {
	var x float64
	if err := v.Decode(&x); err != nil || x != math.Trunc(x) || math.Abs(x) > 1<<53 {
		return 0, fmt.Errorf("want a whole number, got %q", v.Value)
	}
	return int(x), nil
}

// decodeSchedule reads a number or the zoo's linear schedule "lin_<x>"
// (decaying from x to 0 over the training budget).
func decodeSchedule(v *yaml.Node) (x float64, linear bool, err error) {
	s := v.Value
	if rest, ok := strings.CutPrefix(s, "lin_"); ok {
		x, err = strconv.ParseFloat(rest, 64)
		if err != nil {
			return 0, false, fmt.Errorf("schedule %q: want lin_<number>", s)
		}
		return x, true, nil
	}
	if err := v.Decode(&x); err != nil {
		return 0, false, fmt.Errorf("want a number or lin_<number>, got %q", s)
	}
	return x, false, nil
}

// decodeNormalize reads the zoo's normalize: a boolean (both observation
// and reward normalisation, as VecNormalize's defaults) or a Python dict
// string with norm_obs and norm_reward.
func decodeNormalize(v *yaml.Node) (obs, rew bool, err error) {
	var b bool
	if v.Tag == "!!bool" {
		if err := v.Decode(&b); err != nil {
			return false, false, err
		}
		return b, b, nil
	}
	kw, err := parsePyDict(strings.TrimSpace(v.Value), "{", "}", ":")
	if err != nil {
		return false, false, err
	}
	obs, rew = true, true
	for k, val := range kw {
		b, err := pyBool(val)
		if err != nil {
			return false, false, fmt.Errorf("%s: %v", k, err)
		}
		switch k {
		case "norm_obs":
			obs = b
		case "norm_reward":
			rew = b
		default:
			return false, false, fmt.Errorf("VecNormalize argument %q is not implemented (known: norm_obs, norm_reward)", k)
		}
	}
	return obs, rew, nil
}

// applyPolicyKwargs honours the zoo's policy_kwargs string "dict(k=v, …)".
func (c *Config) applyPolicyKwargs(s string) error {
	kw, err := parsePyDict(strings.TrimSpace(s), "dict(", ")", "=")
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(kw)) {
		val := kw[k]
		switch k {
		case "log_std_init":
			x, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return fmt.Errorf("log_std_init %q: want a number", val)
			}
			c.LogStdInit = x
		case "ortho_init":
			b, err := pyBool(val)
			if err != nil {
				return fmt.Errorf("ortho_init: %v", err)
			}
			c.NoOrthoInit = !b
		case "activation_fn":
			switch val {
			case "nn.Tanh":
				c.Activation = "tanh"
			case "nn.ReLU":
				c.Activation = "relu"
			default:
				return fmt.Errorf("activation_fn %s: only nn.Tanh and nn.ReLU are implemented", val)
			}
		case "net_arch":
			h, err := parseNetArch(val)
			if err != nil {
				return fmt.Errorf("net_arch %s: %v", val, err)
			}
			c.Hidden = h
		default:
			return fmt.Errorf("policy_kwargs %s is not implemented (known: log_std_init, ortho_init, activation_fn, net_arch)", k)
		}
	}
	return nil
}

var (
	intList  = regexp.MustCompile(`^\[\s*(\d+(\s*,\s*\d+)*)?\s*,?\s*\]$`)
	piVfDict = regexp.MustCompile(`^\[?\s*dict\(\s*pi\s*=\s*(\[[^\]]*\])\s*,\s*vf\s*=\s*(\[[^\]]*\])\s*\)\s*,?\s*\]?$`)
)

// parseNetArch reads a list of widths or dict(pi=[…], vf=[…]) (optionally in
// a list, SB3's older form); actor and critic share one width list here.
func parseNetArch(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if intList.MatchString(s) {
		return parseInts(s)
	}
	if m := piVfDict.FindStringSubmatch(s); m != nil {
		pi, err := parseInts(m[1])
		if err != nil {
			return nil, err
		}
		vf, err := parseInts(m[2])
		if err != nil {
			return nil, err
		}
		if !slices.Equal(pi, vf) {
			return nil, fmt.Errorf("different actor (pi) and critic (vf) widths are not implemented")
		}
		return pi, nil
	}
	return nil, fmt.Errorf("want [w1, w2, …] or dict(pi=[…], vf=[…])")
}

func parseInts(s string) ([]int, error) {
	s = strings.Trim(strings.TrimSpace(s), "[]")
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("width %q: want a positive integer", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no widths")
	}
	return out, nil
}

// parsePyDict splits the Python literal open … close into key sep value
// pairs at top-level commas (brackets and parentheses nest).
func parsePyDict(s, open, close, sep string) (map[string]string, error) {
	inner, ok := strings.CutPrefix(s, open)
	if ok {
		inner, ok = strings.CutSuffix(inner, close)
	}
	if !ok {
		return nil, fmt.Errorf("%q: want %s…%s", s, open, close)
	}
	out := map[string]string{}
	depth, start := 0, 0
	flush := func(part string) error {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil
		}
		k, v, ok := strings.Cut(part, sep)
		if !ok {
			return fmt.Errorf("%q: want key%svalue", part, sep)
		}
		k = strings.Trim(strings.TrimSpace(k), `'"`)
		if _, dup := out[k]; dup {
			return fmt.Errorf("%s given twice", k)
		}
		out[k] = strings.TrimSpace(v)
		return nil
	}
	for i, r := range inner {
		switch r {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				if err := flush(inner[start:i]); err != nil {
					return nil, err
				}
				start = i + 1
			}
		}
	}
	if err := flush(inner[start:]); err != nil {
		return nil, err
	}
	return out, nil
}

func pyBool(s string) (bool, error) {
	switch s {
	case "True", "true":
		return true, nil
	case "False", "false":
		return false, nil
	}
	return false, fmt.Errorf("%q: want True or False", s)
}
