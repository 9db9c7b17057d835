package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// outputKind says what an output flag names: a file ("-" may mean stdout) or
// a folder the command creates (with its parents) and fills.
type outputKind int

const (
	outputFile outputKind = iota + 1
	outputFolder
)

// outputFlags lists every flag of every command that names something the
// command writes, by command path and flag name. checkOutputs checks each
// before any work starts, so that a run never learns, trains or waits for a
// federation only to fail at its last step (TestEveryOutputFlagChecked
// fails when a command gains an output flag that is not listed here).
var outputFlags = map[string]map[string]outputKind{
	"fedirl barycenter":          {"out": outputFile},
	"fedirl bounds":              {"out": outputFile},
	"fedirl fuse":                {"out": outputFile},
	"fedirl simulate":            {"out": outputFile},
	"fedirl client":              {"out": outputFile, "dp-ledger": outputFile, "distill-out": outputFile},
	"fedirl client eval":         {"out": outputFile},
	"fedirl env episodes":        {"demos-out": outputFile},
	"fedirl env render":          {"out": outputFile},
	"fedirl env rollout":         {"out": outputFile},
	"fedirl gridworld export":    {"out": outputFolder},
	"fedirl irl":                 {"out": outputFile},
	"fedirl ot distance":         {"out": outputFile},
	"fedirl ppo eval":            {"out": outputFile},
	"fedirl ppo study":           {"out": outputFolder},
	"fedirl ppo train":           {"out": outputFolder},
	"fedirl reproduce control":   {"out": outputFolder},
	"fedirl reproduce gridworld": {"out": outputFolder},
	"fedirl reward distance":     {"out": outputFile},
	"fedirl server":              {"addr-file": outputFile},
	"fedirl server status":       {"out": outputFile},
	"fedirl server task list":    {"out": outputFile},
	"fedirl server task create":  {"tokens-out": outputFile},
	"fedirl server token rotate": {"out": outputFile},
	"fedirl sweep control":       {"out": outputFolder},
	"fedirl sweep gridworld":     {"out": outputFolder},
	"fedirl sweep poisoning":     {"out": outputFolder},
}

// isOutputFlagName reports whether a flag's name says it names an output.
func isOutputFlagName(name string) bool {
	return name == "out" || strings.HasSuffix(name, "-out") || name == "addr-file" || name == "dp-ledger"
}

// checkOutputs checks, before a command does any work, every output flag
// of cmd that was given explicitly or has a non-empty default: an explicit
// empty value is refused (it never quietly means the default), a file's
// folder must exist and take a new file, a folder must be a folder (or
// creatable under a writable one). Stdout ("-") is always fine.
func checkOutputs(cmd *cobra.Command) error {
	kinds := outputFlags[cmd.CommandPath()]
	var errs []error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		kind, ok := kinds[f.Name]
		if !ok || f.Deprecated != "" {
			return
		}
		changed := flagChanged(cmd, f.Name)
		v := f.Value.String()
		if v == "" {
			if changed {
				what := "a file, or - for stdout"
				if kind == outputFolder {
					what = "a folder, or leave --" + f.Name + " out for the default"
				}
				if f.DefValue == "" && kind == outputFile {
					what = "a file, or leave --" + f.Name + " out"
				}
				errs = append(errs, fmt.Errorf(`--%s "": an empty path is not a place to write; give %s`, f.Name, what))
			}
			return
		}
		if v == "-" && kind == outputFile {
			return
		}
		if !changed && kind == outputFolder {
			return // a default folder (runs/…) is created by the command
		}
		if err := checkOutputPath(v, kind); err != nil {
			errs = append(errs, fmt.Errorf("--%s %s: %w", f.Name, v, err))
		}
	})
	return errors.Join(errs...)
}

// checkOutputPath checks that path can be written as kind, creating
// nothing that stays: a probe file is made and removed in the folder that
// would receive it.
func checkOutputPath(path string, kind outputKind) error {
	st, err := os.Stat(path)
	switch {
	case err == nil && kind == outputFile && st.IsDir():
		return errors.New("is a folder: give a file name")
	case err == nil && kind == outputFolder && !st.IsDir():
		return errors.New("is a file: give a folder")
	case err == nil && kind == outputFile:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("cannot be written: %w", unwrapPath(err))
		}
		return f.Close()
	case err == nil:
		return probeWritable(path)
	case !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return unwrapPath(err)
	}
	dir := filepath.Dir(path)
	if kind == outputFile {
		st, err := os.Stat(dir)
		if errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("%s is inside a file, not a folder", dir)
		}
		if err != nil {
			return fmt.Errorf("its folder %s does not exist (create it first)", dir)
		}
		if !st.IsDir() {
			return fmt.Errorf("%s is not a folder", dir)
		}
		return probeWritable(dir)
	}
	// A new folder: its nearest existing ancestor must take it.
	for {
		st, err := os.Stat(dir)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s is a file, not a folder", dir)
			}
			return probeWritable(dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return unwrapPath(err)
		}
		dir = parent
	}
}

// probeWritable creates and removes a file in dir.
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".fedirl-write-check-*")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", dir, unwrapPath(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// unwrapPath strips the *PathError's operation and path (the caller names
// the path already).
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
