package federation

import (
	"context"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/privacy"
)

// TestImplausibleDeclarationsRefused is issue 35's acceptance 4 at the
// coordinator: on a task requiring (ε ≤ 2, δ ≤ 1e-5)-DP, a submission of
// ‖θ‖ = 10⁵ declared with clip 0.056 and the σ of ε = 1 is refused with
// InvalidArgument giving the bound, and stores nothing; a truthful release
// of the same mechanism is accepted. A demo_count above the task's
// max_demo_count is refused naming both.
func TestImplausibleDeclarationsRefused(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, CoordinatorConfig{})
	spec := privateSpec("p", 3, 2, 1)
	spec.MaxDemoCount, spec.MaxThetaNorm = 1000, 1e6
	tok := f.create(t, spec, "alice", "bob")
	m, err := privacy.New(privacy.Params{Epsilon: 1, Delta: 1e-5, Clip: 0.056})
	if err != nil {
		t.Fatal(err)
	}
	d := m.Declaration()
	s := sub("p", "alice", 1, 1e5, 0, 0)
	s.Privacy = &d
	_, err = f.coord.Submit(ctx, Credentials{Token: tok["alice"]}, s)
	if CodeOf(err) != CodeInvalidArgument || !strings.Contains(err.Error(), "theta has norm 100000, above") {
		t.Fatalf("‖θ‖ = 1e5 under clip 0.056: %v, want InvalidArgument with the bound", err)
	}
	if n := f.count(t, "p", 1); n != 0 {
		t.Fatalf("%d submissions stored after the refusal", n)
	}
	s = sub("p", "alice", 1, 0.01, 0.02, 0.03)
	s.Theta = m.Release(nil, s.Theta, privacy.CryptoSource())
	s.Privacy = &d
	if _, err := f.coord.Submit(ctx, Credentials{Token: tok["alice"]}, s); err != nil {
		t.Fatalf("a truthful release: %v", err)
	}
	s = sub("p", "bob", 1, m.Release(nil, []float64{0, 0, 0}, privacy.CryptoSource())...)
	s.Privacy, s.DemoCount = &d, 1<<31-1
	_, err = f.coord.Submit(ctx, Credentials{Token: tok["bob"]}, s)
	if CodeOf(err) != CodeInvalidArgument || !strings.Contains(err.Error(), "demo_count 2147483647 above the task's max_demo_count 1000") {
		t.Fatalf("demo_count 2³¹−1 under max_demo_count 1000: %v", err)
	}
}
