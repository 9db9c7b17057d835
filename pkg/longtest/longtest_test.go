package longtest

import "testing"

func TestPickFollowsVar(t *testing.T) {
	for _, c := range []struct {
		val  string
		want int
	}{{"", 1}, {"0", 1}, {"false", 1}, {"1", 2}, {"yes", 2}} {
		t.Setenv(Var, c.val)
		if got := Pick(1, 2); got != c.want {
			t.Errorf("%s=%q: Pick(1, 2) = %d, want %d", Var, c.val, got, c.want)
		}
	}
}
