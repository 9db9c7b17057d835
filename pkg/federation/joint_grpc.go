package federation

import (
	"github.com/fedirl/fedirl/pkg/jointopt"
	pb "github.com/fedirl/fedirl/proto"
)

// The gRPC messages of joint rounds (proto: Eval, JointRound).

func evalToPB(e *jointopt.Eval) *pb.Eval {
	if e == nil {
		return nil
	}
	return &pb.Eval{Value: e.Value, Grad: e.Grad, Hess: e.Hess}
}

func evalFromPB(p *pb.Eval) *jointopt.Eval {
	if p == nil {
		return nil
	}
	return &jointopt.Eval{Value: p.GetValue(), Grad: p.GetGrad(), Hess: p.GetHess()}
}

// jointToPB converts a joint round for the wire; the optimizer's state
// (State) stays on the server.
func jointToPB(r *JointRound) *pb.JointRound {
	if r == nil {
		return nil
	}
	p := &pb.JointRound{Trial: r.Trial, Value: r.Value, GradNorm: r.GradNorm, Next: r.Next, Done: r.Done,
		Reason: r.Reason, Rounds: int32(r.Rounds), Steps: int32(r.Steps)}
	for _, n := range r.DemoCounts {
		p.DemoCounts = append(p.DemoCounts, int32(n))
	}
	return p
}

func jointFromPB(p *pb.JointRound) *JointRound {
	if p == nil {
		return nil
	}
	r := &JointRound{Trial: p.GetTrial(), Value: p.GetValue(), GradNorm: p.GetGradNorm(), Next: p.GetNext(), Done: p.GetDone(),
		Reason: p.GetReason(), Rounds: int(p.GetRounds()), Steps: int(p.GetSteps())}
	for _, n := range p.GetDemoCounts() {
		r.DemoCounts = append(r.DemoCounts, int(n))
	}
	return r
}
