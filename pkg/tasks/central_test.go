package tasks

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/privacy"
)

// TestCentralPrivacyWithTheRealFuser: with the server's fuser, a task with
// central privacy is accepted for mean fusion (a weighted mean of the
// clipped θ_i, whatever the weighting: the demonstration counts are not
// passed to it) and refused for barycentric fusion, which is not a weighted
// mean of its inputs, so the mean's sensitivity 2C·max α_i does not bound
// it.
func TestCentralPrivacyWithTheRealFuser(t *testing.T) {
	store, err := federation.OpenStore(filepath.Join(t.TempDir(), "fed.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	coord, err := federation.NewCoordinator(store, federation.CoordinatorConfig{Fuser: NewFuser()})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	central := &privacy.Central{Epsilon: 1, Delta: 1e-5, Clip: 0.05}
	for _, tc := range []struct {
		opt  fusion.Options
		want string // "" accepted
	}{
		{fusion.Options{Method: "mean"}, ""},
		{fusion.Options{Method: "mean", Weighting: fusion.WeightingDemos}, ""},
		{fusion.Options{Method: "barycentric"}, "weighted mean"},
		{fusion.Options{Method: "barycentric"}, ""}, // with bound "output"
	} {
		spec := gridSpec(t, fmt.Sprintf("c-%s-%s-%d", tc.opt.Method, tc.opt.Weighting, len(tc.want)), tc.opt)
		spec.CentralPrivacy = central
		if tc.want == "" && tc.opt.Method == "barycentric" {
			out := *central
			out.Bound = privacy.BoundOutput
			spec.CentralPrivacy = &out
		}
		_, err := coord.CreateTask(spec, []string{"a", "b"})
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.opt, err, tc.want)
		}
	}
}
