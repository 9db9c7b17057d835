package mdp

import (
	"runtime"
	"sync"
)

// rangeFn processes states [lo,hi) as worker w.
type rangeFn func(w, lo, hi int)

type job struct {
	fn     rangeFn
	w      int
	lo, hi int
}

// pool is a fixed set of goroutines that run range jobs. Dispatching through
// channels instead of go statements keeps a sweep allocation-free.
type pool struct {
	jobs []chan job // jobs[w-1] feeds worker w (worker 0 is the caller)
	wg   sync.WaitGroup
	once sync.Once
}

func newPool(workers int) *pool {
	p := &pool{}
	for w := 1; w < workers; w++ {
		ch := make(chan job)
		p.jobs = append(p.jobs, ch)
		go p.loop(ch)
	}
	return p
}

func (p *pool) loop(ch chan job) {
	for j := range ch {
		j.fn(j.w, j.lo, j.hi)
		j = job{} // drop the reference so an idle worker does not pin its workspace
		_ = j
		p.wg.Done()
	}
}

// run calls fn over the ranges [bounds[w], bounds[w+1]) in parallel and waits.
func (p *pool) run(fn rangeFn, bounds []int) {
	n := len(bounds) - 1
	if n > 1 {
		p.wg.Add(n - 1)
		for w := 1; w < n; w++ {
			p.jobs[w-1] <- job{fn: fn, w: w, lo: bounds[w], hi: bounds[w+1]}
		}
	}
	fn(0, bounds[0], bounds[1])
	if n > 1 {
		p.wg.Wait()
	}
}

func (p *pool) close() {
	p.once.Do(func() {
		for _, ch := range p.jobs {
			close(ch)
		}
	})
}

// defaultWorkers is the number of goroutines used when Options.Workers is 0.
func defaultWorkers() int { return runtime.GOMAXPROCS(0) }
