package federation

import (
	"crypto/sha256"
	"crypto/subtle"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the server's Prometheus metrics (official client library). A
// Coordinator given Metrics counts submissions and fusions; CountConnections
// counts open connections; the task-state gauge reads the store at scrape
// time. Register them on a registry with Register.
type Metrics struct {
	submissions *prometheus.CounterVec
	fusions     *prometheus.CounterVec
	fusionTime  prometheus.Histogram
	outlier     outlierSeries // fedirl_fusion_outlier_score, bounded (metrics_tasks.go)
	conns       prometheus.GaugeFunc
	open        atomic.Int64
	coord       atomic.Pointer[Coordinator]
	limiter     atomic.Pointer[ConnLimiter]
}

// NewMetrics returns unregistered metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		submissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fedirl_submissions_total",
			Help: "Submissions by outcome (accepted, duplicate, refused) and, for refusals, the status code.",
		}, []string{"outcome", "code"}),
		fusions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fedirl_fusions_total",
			Help: "Fusion attempts by outcome (fused, transient, failed, interrupted).",
		}, []string{"outcome"}),
		fusionTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "fedirl_fusion_seconds",
			Help:    "Duration of successful fusions.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms … 4.4 min
		}),
	}
	m.conns = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fedirl_open_connections",
		Help: "Open client connections (of listeners wrapped by CountConnections).",
	}, func() float64 { return float64(m.open.Load()) })
	return m
}

// collectors returns every collector of m.
func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.submissions, m.fusions, m.fusionTime, m.conns, taskStates{m}, listenerEvents{m}, taskSeries{m}}
}

// Register registers every metric on reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// describeAll sends the descriptors of every metric of m.
func (m *Metrics) describeAll(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

func (m *Metrics) submission(outcome string, code Code) {
	if m == nil {
		return
	}
	c := ""
	if outcome == "refused" {
		c = code.String()
	}
	m.submissions.WithLabelValues(outcome, c).Inc()
}

func (m *Metrics) fusion(outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.fusions.WithLabelValues(outcome).Inc()
	if outcome == "fused" {
		m.fusionTime.Observe(d.Seconds())
	}
}

// outliers records the outlier scores of a task's fused round
// (fedirl_fusion_outlier_score, bounded: metrics_tasks.go).
func (m *Metrics) outliers(taskID string, clients []string, scores []float64) {
	if m == nil || scores == nil {
		return
	}
	m.outlier.set(taskID, clients, scores)
}

// taskStates is the fedirl_tasks gauge, read from the store at scrape time.
type taskStates struct{ m *Metrics }

var taskStatesDesc = prometheus.NewDesc("fedirl_tasks", "Tasks by state (open, fusing, done, failed, corrupt: a record the server cannot read).", []string{"state"}, nil)

// taskStateNames are the states of the fedirl_tasks gauge.
var taskStateNames = []string{"open", "fusing", "done", "failed", "corrupt"}

func (t taskStates) Describe(ch chan<- *prometheus.Desc) { ch <- taskStatesDesc }

func (t taskStates) Collect(ch chan<- prometheus.Metric) {
	c := t.m.coord.Load()
	if c == nil {
		return
	}
	counts := map[string]float64{}
	tasks, _ := c.store.listTasks()
	c.mu.Lock()
	corrupt := maps.Clone(c.corrupt)
	c.mu.Unlock()
	for _, t := range tasks {
		_, bad := corrupt[t.ID]
		switch {
		case bad || t.Err != nil:
			counts["corrupt"]++
		case t.State.Failed != "":
			counts["failed"]++
		case t.State.Done:
			counts["done"]++
		case t.State.Fusing:
			counts["fusing"]++
		default:
			counts["open"]++
		}
	}
	for _, state := range taskStateNames {
		ch <- prometheus.MustNewConstMetric(taskStatesDesc, prometheus.GaugeValue, counts[state], state)
	}
}

// listenerEvents is the fedirl_listener_connections_total counter, read
// from the ConnLimiter that CountConnections wraps (ConnLimiter.Counts) at
// scrape time: what the listener did with every connection, refusals
// included, which the audit log only samples.
type listenerEvents struct{ m *Metrics }

var listenerEventsDesc = prometheus.NewDesc("fedirl_listener_connections_total",
	"Connections by what the listener did with them (ConnLimiter): admitted; refused_rate (the peer connects too fast), refused_peer_limit (the peer holds its share), refused_full (every place authenticated), all three reset at accept; evicted (unauthenticated, closed to admit a newcomer), expired (not authenticated in time), too_many_bytes (sent too much unauthenticated).",
	[]string{"event"}, nil)

func (e listenerEvents) Describe(ch chan<- *prometheus.Desc) { ch <- listenerEventsDesc }

func (e listenerEvents) Collect(ch chan<- prometheus.Metric) {
	l := e.m.limiter.Load()
	if l == nil {
		return
	}
	c := l.Counts()
	for _, v := range []struct {
		event string
		n     uint64
	}{{"admitted", c.Admitted}, {"refused_rate", c.RefusedRate}, {"refused_peer_limit", c.RefusedPeerLimit}, {"refused_full", c.RefusedFull},
		{"evicted", c.Evicted}, {"expired", c.Expired}, {"too_many_bytes", c.TooManyBytes}} {
		ch <- prometheus.MustNewConstMetric(listenerEventsDesc, prometheus.CounterValue, float64(v.n), v.event)
	}
}

// CountConnections wraps lis so that m counts its open connections; when
// lis is a *ConnLimiter, m also exports its counts
// (fedirl_listener_connections_total).
func (m *Metrics) CountConnections(lis net.Listener) net.Listener {
	if l, ok := lis.(*ConnLimiter); ok {
		m.limiter.Store(l)
	}
	return &countingListener{Listener: lis, m: m}
}

type countingListener struct {
	net.Listener
	m *Metrics
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.m.open.Add(1)
	return &countingConn{Conn: c, m: l.m}, nil
}

type countingConn struct {
	net.Conn
	m      *Metrics
	closed atomic.Bool
}

func (c *countingConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.m.open.Add(-1)
	}
	return c.Conn.Close()
}

// MetricsHandler serves the metrics of g in the Prometheus text format
// (promhttp); with a non-empty token, only to requests carrying
// "Authorization: Bearer <token>" (compared in constant time; Prometheus
// sends it with authorization.credentials_file in its scrape config), others
// get 401.
func MetricsHandler(g prometheus.Gatherer, token string) http.Handler {
	h := promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	if token == "" {
		return h
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		gotSum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(gotSum[:], want[:]) != 1 || !bearer {
			w.Header().Set("WWW-Authenticate", `Bearer realm="fedirl metrics"`)
			http.Error(w, "metrics need the bearer token of --metrics-token-file", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
