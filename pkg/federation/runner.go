package federation

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/fedirl/fedirl/pkg/privacy"
)

// LocalClient is one simulated client of an in-process federation.
type LocalClient struct {
	ID      string
	Learner Learner
}

// InProcessConfig configures RunInProcess. Zero values are documented defaults.
type InProcessConfig struct {
	// StorePath is the bbolt file to use (fsynced, kept afterwards); ""
	// means an in-memory store that is discarded when RunInProcess returns.
	StorePath string
	// Fuser fuses each round (e.g. tasks.Fuser); required.
	Fuser Fuser
	// Client is the template client configuration (TaskID and ClientID are set per client).
	Client ClientConfig
	// Privacy, if set, returns the privacy configuration of client i (in the
	// order of clients), replacing Client.Privacy when not nil: e.g. each
	// client's own seeded noise source in a study.
	Privacy func(i int) *ClientPrivacy
	// CentralNoise is the coordinator's noise source for a task with
	// central privacy (CoordinatorConfig.CentralNoise); nil: crypto/rand.
	CentralNoise privacy.Source
}

// RunInProcess runs a whole federation in one process through the same
// Coordinator and RunClient that the networked server and client use, with
// the InProcess transport: it creates the task, runs every client
// concurrently, and returns the fused result of each round and each
// client's report (in the order of clients).
func RunInProcess(ctx context.Context, spec TaskSpec, clients []LocalClient, cfg InProcessConfig) ([]FusedResult, []ClientReport, error) {
	var store roundStore = newMemStore()
	if cfg.StorePath != "" {
		s, err := OpenStore(cfg.StorePath)
		if err != nil {
			return nil, nil, err
		}
		defer s.Close()
		store = s
	}
	coord, err := newCoordinator(store, CoordinatorConfig{Fuser: cfg.Fuser, OpenStatus: true, CentralNoise: cfg.CentralNoise}) // in-process: no network peers
	if err != nil {
		return nil, nil, err
	}
	defer coord.Close()
	ids := make([]string, len(clients))
	for i, c := range clients {
		ids[i] = c.ID
	}
	tokens, err := coord.CreateTask(spec, ids)
	if err != nil {
		return nil, nil, err
	}
	reports := make([]ClientReport, len(clients))
	g, gctx := errgroup.WithContext(ctx)
	for i, c := range clients {
		cc := cfg.Client
		cc.TaskID, cc.ClientID = spec.ID, c.ID
		if cfg.Privacy != nil {
			if p := cfg.Privacy(i); p != nil {
				cc.Privacy = p
			}
		}
		g.Go(func() error {
			var err error
			reports[i], err = RunClient(gctx, InProcess{C: coord, Cred: Credentials{Token: tokens[c.ID]}}, c.Learner, cc)
			if err != nil {
				return fmt.Errorf("client %s: %w", c.ID, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, reports, err
	}
	sts, err := coord.Status(ctx, Credentials{})
	if err != nil {
		return nil, reports, err
	}
	for _, st := range sts {
		if st.ID == spec.ID {
			return st.Fused, reports, nil
		}
	}
	return nil, reports, fmt.Errorf("in-process federation: task %s vanished", spec.ID)
}
