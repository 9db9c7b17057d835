// Package progress reports the progress of long work on a terminal and stays
// silent when the output is not a terminal (pipes, files, CI logs).
//
// It wraps github.com/schollz/progressbar; it does not log or time anything.
package progress

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar counts finished units of work; a nil *Bar is valid and does nothing.
type Bar struct {
	bar *progressbar.ProgressBar
}

// New returns a bar of total units labelled description, drawn on stderr when
// stderr is a terminal and quiet otherwise.
func New(total int, description string) *Bar {
	return NewTo(os.Stderr, total, description)
}

// NewTo is New writing to w; it draws only if w is an *os.File on a terminal.
func NewTo(w io.Writer, total int, description string) *Bar {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &Bar{bar: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100_000_000),
	)}
}

// Add records n more finished units. Safe on a nil *Bar.
func (b *Bar) Add(n int) {
	if b != nil {
		_ = b.bar.Add(n)
	}
}

// Finish completes and clears the bar. Safe on a nil *Bar.
func (b *Bar) Finish() {
	if b != nil {
		_ = b.bar.Finish()
	}
}
