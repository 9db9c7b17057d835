package federation

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestCreateTaskRPCRefusesOverLimits: a CreateTask RPC whose description is
// over the server's bound is refused naming the field and the bound (the
// issue stored a 5 MB description, after which every GetTask failed), and
// the server keeps serving; a description at the bound is accepted.
func TestCreateTaskRPCRefusesOverLimits(t *testing.T) {
	admin := strings.Repeat("a", 40)
	f := newFixture(t, CoordinatorConfig{AdminToken: admin, Limits: Limits{MaxDescriptionBytes: 1000}})
	tok := f.create(t, testSpec("t", 2, 1), "alice")
	addr := serve(t, f, GRPCServerConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dial(t, addr, DialConfig{Token: admin})
	spec := testSpec("long", 2, 1)
	spec.Description = strings.Repeat("x", 1001)
	_, err := c.CreateTask(ctx, spec, []string{"a"})
	if CodeOf(err) != CodeInvalidArgument || !strings.Contains(err.Error(), "description is 1001 bytes, above the server's bound of 1000 (--max-description-bytes)") {
		t.Fatalf("long description: %v", err)
	}
	if _, err := dial(t, addr, DialConfig{Token: tok["alice"]}).GetTask(ctx, "t", "alice"); err != nil {
		t.Fatalf("the server stopped serving: %v", err)
	}
	spec.Description = spec.Description[:1000]
	tokens, err := c.CreateTask(ctx, spec, []string{"a"})
	if err != nil {
		t.Fatalf("a description at the bound: %v", err)
	}
	info, err := dial(t, addr, DialConfig{Token: tokens["a"]}).GetTask(ctx, "long", "a")
	if err != nil || len(info.Spec.Description) != 1000 {
		t.Fatalf("GetTask of the new task: %v", err)
	}
}

// TestLimitsValidate: unusable limits are refused naming their flag.
func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		l    Limits
		want string
	}{
		{Limits{MaxProbePoints: -1}, "--max-probe-points -1"},
		{Limits{MinEpsilon: 2, MaxEpsilon: 1}, "--min-epsilon 2, --max-epsilon 1"},
		{Limits{MinEpsilon: -1}, "--min-epsilon -1"},
	} {
		if err := tc.l.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.l, err, tc.want)
		}
	}
	if err := DefaultLimits().Validate(); err != nil {
		t.Fatal(err)
	}
}
