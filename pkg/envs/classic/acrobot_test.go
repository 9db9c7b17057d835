package classic

import (
	"fmt"
	"math"
	"testing"
)

// TestAcrobotGoalIgnoresLinkLengths checks Gymnasium's goal semantics: the
// episode terminates exactly when −cos θ1 − cos(θ1+θ2) > 1, whatever the link
// lengths, as for a Gymnasium AcrobotEnv whose LINK_LENGTH_1/LINK_LENGTH_2
// attributes were changed. The states are frozen (dt = 1e-12) and sweep a
// grid of angles; the test also confirms that the grid contains states where
// a length-scaled tip height −l1·cos θ1 − l2·cos(θ1+θ2) > 1 would decide
// differently, so it would catch a test that scaled with the lengths.
func TestAcrobotGoalIgnoresLinkLengths(t *testing.T) {
	for _, l := range [][2]float64{{1, 1}, {2, 2}, {0.5, 0.5}, {1.25, 1.25}, {0.5, 2}, {2, 0.3}} {
		t.Run(fmt.Sprintf("l1=%g,l2=%g", l[0], l[1]), func(t *testing.T) {
			e := mustMake(t, "Acrobot-v1", map[string]float64{"link_length_1": l[0], "link_length_2": l[1], "dt": 1e-12})
			const n = 41
			disagree := 0
			for i := range n {
				for j := range n {
					th1 := -math.Pi + 2*math.Pi*(float64(i)+0.37)/n
					th2 := -math.Pi + 2*math.Pi*(float64(j)+0.61)/n
					unit := -math.Cos(th1)-math.Cos(th2+th1) > 1
					scaled := -l[0]*math.Cos(th1)-l[1]*math.Cos(th2+th1) > 1
					if unit != scaled {
						disagree++
					}
					mustSet(t, e, th1, th2, 0, 0)
					_, r, term, _ := e.Step([]float64{1})
					if term != unit {
						t.Fatalf("θ = (%.4f, %.4f): terminated %v, want Gymnasium's −cos θ1 − cos(θ1+θ2) > 1 = %v", th1, th2, term, unit)
					}
					if want := map[bool]float64{true: 0, false: -1}[unit]; r != want {
						t.Fatalf("θ = (%.4f, %.4f): reward %v, want %v", th1, th2, r, want)
					}
				}
			}
			if (l[0] != 1 || l[1] != 1) && disagree == 0 {
				t.Fatalf("no state on the grid separates the unit goal test from the length-scaled one")
			}
		})
	}
}

// TestAcrobotClientsKeepGymnasiumGoal checks that the paper's clients, whose
// link lengths are scaled, keep goal_height = 1, i.e. Gymnasium's unscaled test.
func TestAcrobotClientsKeepGymnasiumGoal(t *testing.T) {
	for _, i := range []int{0, 3, 5, 9} {
		p, err := ClientParams("Acrobot-v1", i)
		if err != nil {
			t.Fatal(err)
		}
		if p[AcrobotGoalHeight] != 1 {
			t.Errorf("client %d: goal_height %v, want Gymnasium's 1", i, p[AcrobotGoalHeight])
		}
	}
}
