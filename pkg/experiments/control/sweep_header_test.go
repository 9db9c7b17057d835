package control

import (
	"strings"
	"testing"
)

// TestSweepForestHeaderMarksQuick: the --quick sweep's forest plot says it
// is a smoke test; the pre-declared sweep's does not.
func TestSweepForestHeaderMarksQuick(t *testing.T) {
	quick := sweepForestHeader([]SweepResult{{Config: SweepBase(true)}})
	full := sweepForestHeader([]SweepResult{{Config: SweepBase(false)}})
	if !strings.HasPrefix(quick, "SMOKE TEST (--quick)") || strings.Contains(full, "SMOKE") {
		t.Errorf("quick header %q, full header %q", quick, full)
	}
}
