package federation

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// This file holds the per-task and per-client metrics of issue 53, every
// one bounded and deleted with its task: round progress and privacy spent
// per open task (read from the store at scrape time, at most MaxTaskSeries
// tasks), outlier scores of the last fused rounds (at most
// MaxOutlierTasks tasks × MaxOutlierClients clients), connections by state
// and the client ids holding the most places (TopClientSeries). Before,
// outlier series were never deleted (14,833 after 1,273 tasks).

// Bounds of the labelled series.
const (
	// MaxTaskSeries is the most tasks with round-progress and privacy
	// series (the open tasks first in id order; fedirl_task_series_omitted
	// counts the rest).
	MaxTaskSeries = 500
	// MaxOutlierTasks is the most tasks with outlier-score series: those
	// fused last.
	MaxOutlierTasks = 64
	// MaxOutlierClients is the most clients per task with an outlier-score
	// series: those with the highest scores.
	MaxOutlierClients = 16
	// TopClientSeries is the number of client ids with a
	// fedirl_client_connections series: those holding the most places.
	TopClientSeries = 10
)

// outlierSeries keeps the outlier scores of the last MaxOutlierTasks fused
// tasks, MaxOutlierClients clients each.
type outlierSeries struct {
	mu    sync.Mutex
	tasks map[string]outlierTask
	seq   uint64
}

type outlierTask struct {
	clients []string
	scores  []float64
	seq     uint64 // fusion order, for dropping the oldest
}

// set records a fused round's scores, keeping the highest, and drops the
// task fused longest ago when over MaxOutlierTasks.
func (o *outlierSeries) set(task string, clients []string, scores []float64) {
	idx := make([]int, len(clients))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case scores[a] > scores[b]:
			return -1
		case scores[a] < scores[b]:
			return 1
		}
		return 0
	})
	idx = idx[:min(len(idx), MaxOutlierClients)]
	t := outlierTask{clients: make([]string, len(idx)), scores: make([]float64, len(idx))}
	for k, i := range idx {
		t.clients[k], t.scores[k] = clients[i], scores[i]
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tasks == nil {
		o.tasks = map[string]outlierTask{}
	}
	o.seq++
	t.seq = o.seq
	o.tasks[task] = t
	if len(o.tasks) > MaxOutlierTasks {
		oldest, seq := "", uint64(0)
		for id, v := range o.tasks {
			if oldest == "" || v.seq < seq {
				oldest, seq = id, v.seq
			}
		}
		delete(o.tasks, oldest)
	}
}

// privacySpent is the privacy a task's fused rounds have released, by
// basic composition over rounds.
type privacySpent struct {
	central float64 // Σ over fused rounds of the central release's ε
	local   float64 // Σ over fused rounds of the largest ε a client declared
}

// add counts one fused round.
func (p *privacySpent) add(fr *FusedResult) {
	if fr.Central != nil {
		p.central += fr.Central.Epsilon
	}
	m := 0.0
	for _, d := range fr.Privacy {
		m = max(m, d.Epsilon)
	}
	p.local += m
}

var (
	roundDesc       = prometheus.NewDesc("fedirl_round", "Current round of each open task.", []string{"task"}, nil)
	roundSubsDesc   = prometheus.NewDesc("fedirl_round_submissions", "Submissions in the current round of each open task.", []string{"task"}, nil)
	roundQuorumDesc = prometheus.NewDesc("fedirl_round_quorum", "Quorum of each open task's rounds.", []string{"task"}, nil)
	roundDeadline   = prometheus.NewDesc("fedirl_round_deadline_seconds", "Seconds until the current round's deadline (negative once passed), for open tasks with a deadline whose round has started.", []string{"task"}, nil)
	omittedDesc     = prometheus.NewDesc("fedirl_task_series_omitted", "Open tasks without round-progress series: beyond the first MaxTaskSeries (500) by id.", nil, nil)
	privacyDesc     = prometheus.NewDesc("fedirl_privacy_epsilon_spent", "Privacy ε a task's fused rounds released, by basic composition over rounds (tasks that set privacy, the first 500 by id): kind=central, the server's noise (central_privacy); kind=local, the largest ε a client declared in each round.", []string{"task", "kind"}, nil)
	outlierDesc     = prometheus.NewDesc("fedirl_fusion_outlier_score", "Each client's distance to the last fused result of a task (the fuser's unit; pkg/tasks: RMS reward difference on the probe), for the 16 highest-scoring clients of the 64 tasks fused last; deleted with their task.", []string{"task", "client"}, nil)
	connStateDesc   = prometheus.NewDesc("fedirl_connections", "Open connections by state: unauthenticated (evictable: no authenticated call yet, or idle since), authenticated (counted against a client id), reserved (on the places kept for the admin token and health Checks, either state).", []string{"state"}, nil)
	clientConnsDesc = prometheus.NewDesc("fedirl_client_connections", "Authenticated places held by the client ids holding the most (task/client, or (admin); top 10).", []string{"client"}, nil)
)

// taskSeries collects the bounded per-task and per-client series.
type taskSeries struct{ m *Metrics }

func (t taskSeries) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{roundDesc, roundSubsDesc, roundQuorumDesc, roundDeadline, omittedDesc, privacyDesc, outlierDesc, connStateDesc, clientConnsDesc} {
		ch <- d
	}
}

func (t taskSeries) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if l := t.m.limiter.Load(); l != nil {
		st := l.States()
		gauge(connStateDesc, float64(st.Unauthenticated), "unauthenticated")
		gauge(connStateDesc, float64(st.Authenticated), "authenticated")
		gauge(connStateDesc, float64(st.Reserved), "reserved")
		for _, p := range l.TopClients(TopClientSeries) {
			gauge(clientConnsDesc, float64(p.Places), p.Client)
		}
	}
	c := t.m.coord.Load()
	if c == nil {
		return
	}
	tasks, err := c.store.listTasks()
	if err != nil {
		return
	}
	exists := make(map[string]bool, len(tasks))
	now := c.cfg.Now()
	shown, omitted := 0, 0
	c.mu.Lock()
	spent := make(map[string]privacySpent, len(c.privacy))
	for id, p := range c.privacy {
		spent[id] = p
	}
	recs := make(map[string]*taskRecord, len(tasks))
	for _, tk := range tasks {
		recs[tk.ID] = c.tasks[tk.ID]
	}
	c.mu.Unlock()
	privShown := 0
	for _, tk := range tasks {
		exists[tk.ID] = true
		rec := recs[tk.ID]
		if tk.Err != nil || rec == nil {
			continue
		}
		if p, ok := spent[tk.ID]; ok && privShown < MaxTaskSeries {
			privShown++
			if rec.Spec.CentralPrivacy != nil {
				gauge(privacyDesc, p.central, tk.ID, "central")
			}
			if rec.Spec.Privacy != nil {
				gauge(privacyDesc, p.local, tk.ID, "local")
			}
		}
		if tk.State.Done {
			continue
		}
		if shown >= MaxTaskSeries {
			omitted++
			continue
		}
		shown++
		gauge(roundDesc, float64(tk.State.Round), tk.ID)
		gauge(roundSubsDesc, float64(tk.Submissions), tk.ID)
		gauge(roundQuorumDesc, float64(rec.Spec.Quorum), tk.ID)
		if rec.Spec.DeadlineSeconds > 0 && !tk.State.FirstSubmission.IsZero() {
			dl := tk.State.FirstSubmission.Add(time.Duration(rec.Spec.DeadlineSeconds * float64(time.Second)))
			gauge(roundDeadline, dl.Sub(now).Seconds(), tk.ID)
		}
	}
	gauge(omittedDesc, float64(omitted))
	o := &t.m.outlier
	o.mu.Lock()
	defer o.mu.Unlock()
	for id, ot := range o.tasks {
		if !exists[id] {
			delete(o.tasks, id) // deleted with its task
			continue
		}
		for i, cl := range ot.clients {
			gauge(outlierDesc, ot.scores[i], id, cl)
		}
	}
}
