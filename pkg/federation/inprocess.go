package federation

import (
	"context"
	"time"
)

// InProcess is the in-process transport: it calls a Coordinator directly
// with fixed credentials. It implements Federation.
type InProcess struct {
	C    *Coordinator
	Cred Credentials
}

// GetTask implements Federation.
func (p InProcess) GetTask(ctx context.Context, taskID, clientID string) (TaskInfo, error) {
	return p.C.GetTask(ctx, p.Cred, taskID, clientID)
}

// Submit implements Federation.
func (p InProcess) Submit(ctx context.Context, sub Submission) (SubmitResult, error) {
	return p.C.Submit(ctx, p.Cred, sub)
}

// GetFused implements Federation.
func (p InProcess) GetFused(ctx context.Context, taskID, clientID string, round int, wait time.Duration) (FusedStatus, error) {
	return p.C.GetFused(ctx, p.Cred, taskID, clientID, round, wait)
}

// Status implements Federation.
func (p InProcess) Status(ctx context.Context) ([]TaskStatus, error) {
	return p.C.Status(ctx, p.Cred)
}
