package main

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The command line's conventions, one spelling per concept in every command
// (TestFlagConventions walks the command tree and checks them):
//
//   - --out (shorthand -o where a command had it) names the output file or folder;
//   - --jobs is the number of goroutines or units run at the same time; it
//     never changes a result, and 0 or a negative value is refused;
//   - --env names the environment, a comma-separated list where a command
//     runs several;
//   - --seed is the first seed and --seeds the number of seeds: a run uses
//     seeds seed, seed+1, …, seed+seeds−1;
//   - --client i is the paper's client i, counted from 0 (client 0 has the
//     unperturbed physics, client i the appendix's perturbation at i); left
//     out, or -1, it is the environment's default physics;
//   - a flag given explicitly is honoured or refused with a reason: a value
//     of 0 never silently means "the default";
//   - every count (--jobs, --seeds, --iters, --episodes, --steps, bins) is
//     registered with countVar and refuses 0 and negative values while the
//     command line is parsed (TestFlagConventionsCounts checks every int
//     flag of every command).
//
// Old spellings (--output, --workers, --envs) still work as hidden aliases
// that print a deprecation warning.

// aliases maps a command's hidden deprecated flag names to their canonical
// names, per flag set.
var aliases = map[*pflag.FlagSet]map[string]string{}

// deprecatedAlias registers old as a hidden alias of the flag name already
// defined on cmd: it sets the same value and makes cobra print
// "Flag --old has been deprecated, use --name instead" when used.
func deprecatedAlias(cmd *cobra.Command, old, name string) {
	fs := cmd.Flags()
	f := fs.Lookup(name)
	if f == nil {
		panic("deprecatedAlias: no flag --" + name)
	}
	fs.AddFlag(&pflag.Flag{Name: old, Usage: "deprecated: use --" + name, Value: f.Value, DefValue: f.DefValue, NoOptDefVal: f.NoOptDefVal})
	if err := fs.MarkDeprecated(old, "use --"+name+" instead"); err != nil {
		panic(err)
	}
	if aliases[fs] == nil {
		aliases[fs] = map[string]string{}
	}
	aliases[fs][old] = name
}

// flagChanged reports whether the flag name, or one of its deprecated
// aliases, was given on the command line.
func flagChanged(cmd *cobra.Command, name string) bool {
	fs := cmd.Flags()
	if fs.Changed(name) {
		return true
	}
	for old, canon := range aliases[fs] {
		if canon == name && fs.Changed(old) {
			return true
		}
	}
	return false
}

// refuseExplicitZero returns an error naming the first flag of reasons that
// was given explicitly with the value 0, with its reason. It is for flags
// whose zero the code underneath would read as "use the default", so that an
// explicit 0 is refused instead of silently replaced.
func refuseExplicitZero(cmd *cobra.Command, reasons map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(reasons)) {
		if !flagChanged(cmd, name) {
			continue
		}
		f := cmd.Flags().Lookup(name)
		if v, err := strconv.ParseFloat(f.Value.String(), 64); err == nil && v == 0 {
			return fmt.Errorf("--%s 0: %s", name, reasons[name])
		}
	}
	return nil
}

// addJobsFlag registers --jobs (default def; 0 means runtime.GOMAXPROCS(0))
// on cmd, with --workers as its deprecated alias.
func addJobsFlag(cmd *cobra.Command, p *int, def int, usage string) {
	if def == 0 {
		def = runtime.GOMAXPROCS(0)
	}
	countVar(cmd.Flags(), p, "jobs", def, "the number of things run at the same time", usage+" (results do not depend on it)")
	deprecatedAlias(cmd, "workers", "jobs")
}

// checkJobs refuses a --jobs value below 1.
func checkJobs(name string, n int) error {
	if n < 1 {
		return fmt.Errorf("--%s %d: want ≥ 1 (the number of things run at the same time)", name, n)
	}
	return nil
}

// countValue is an int flag that counts something (jobs, seeds, iterations,
// episodes): setting it to 0 or a negative number fails while the command
// line is parsed, before any work, with pflag's
// `invalid argument "0" for "--jobs" flag: want ≥ 1 …`.
type countValue struct {
	p    *int
	what string
}

// String returns the current count.
func (c *countValue) String() string { return strconv.Itoa(*c.p) }

// Set parses s and refuses a count below 1.
func (c *countValue) Set(s string) error {
	v, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return fmt.Errorf("want a whole number ≥ 1 (%s)", c.what)
	}
	if v < 1 {
		return fmt.Errorf("want ≥ 1 (%s)", c.what)
	}
	*c.p = int(v)
	return nil
}

// Type returns "int", as pflag's own int flags do.
func (c *countValue) Type() string { return "int" }

// countVar registers --name as a count flag on fs: its default def may be 0
// ("not given: the preset's"), but an explicit value below 1 is refused.
// what says what is counted, for the refusal.
func countVar(fs *pflag.FlagSet, p *int, name string, def int, what, usage string) {
	*p = def
	fs.Var(&countValue{p: p, what: what}, name, usage)
}
