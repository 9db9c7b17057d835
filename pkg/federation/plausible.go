package federation

import "github.com/fedirl/fedirl/pkg/privacy"

// checkDeclared checks what a submission declares that the server can hold
// against its θ and its task: demo_count within the task's max_demo_count,
// and, for a private submission, a θ whose norm a release of the declared
// mechanism can have (privacy.Plausible, false-refusal probability
// privacy.DefaultFalseRefusal = 10⁻⁹). The declaration must already be
// valid (checkPrivacy).
func checkDeclared(spec *TaskSpec, sub *Submission) *Error {
	if spec.MaxDemoCount > 0 && sub.DemoCount > spec.MaxDemoCount {
		return errorf(CodeInvalidArgument, "task %s: demo_count %d above the task's max_demo_count %d", spec.ID, sub.DemoCount, spec.MaxDemoCount)
	}
	if sub.Privacy != nil {
		v := sub.Theta
		if len(sub.Reward) > 0 {
			v = sub.Reward // the mechanism clips and noises the reward vector alike
		}
		if sub.Eval != nil {
			v = releaseVector(*sub.Eval, sub.Update) // a joint round releases its packed evaluation (Theta is the public trial θ)
		}
		if err := privacy.Plausible(v, *sub.Privacy, 0); err != nil {
			return errorf(CodeInvalidArgument, "task %s: privacy declaration: %v", spec.ID, err)
		}
	}
	return nil
}
