package ot

import (
	"runtime"
	"sync"
)

// ranger is a unit of parallel work: runRange processes items [lo, hi) as
// chunk c (0 ≤ c < nWorkers), so that per-chunk scratch can be indexed by c.
type ranger interface {
	runRange(c, lo, hi int)
}

// poolTask is one chunk handed to a pool worker.
type poolTask struct {
	r         ranger
	c, lo, hi int
	wg        *sync.WaitGroup
}

var (
	poolOnce sync.Once
	poolCh   chan poolTask
	nWorkers int
)

// workers starts the package's worker pool on first use and returns the
// number of chunks work is split into (GOMAXPROCS at that time). The pool's
// goroutines live for the life of the process, like the runtime's own; they
// let kernel passes run on every core without allocating per pass.
func workers() int {
	poolOnce.Do(func() {
		nWorkers = max(1, runtime.GOMAXPROCS(0))
		poolCh = make(chan poolTask)
		for i := 0; i < nWorkers-1; i++ {
			go func() {
				for t := range poolCh {
					t.r.runRange(t.c, t.lo, t.hi)
					t.wg.Done()
				}
			}()
		}
	})
	return nWorkers
}

// parallel runs r over [0, n) split into contiguous chunks of at least
// minChunk items, one per worker, and waits. Each item is processed by exactly
// one chunk, so results do not depend on the number of workers.
func parallel(n, minChunk int, r ranger, wg *sync.WaitGroup) {
	w := workers()
	chunks := w
	if minChunk < 1 {
		minChunk = 1
	}
	if c := n / minChunk; c < chunks {
		chunks = c
	}
	if chunks <= 1 {
		if n > 0 {
			r.runRange(0, 0, n)
		}
		return
	}
	wg.Add(chunks - 1)
	for c := 1; c < chunks; c++ {
		poolCh <- poolTask{r: r, c: c, lo: c * n / chunks, hi: (c + 1) * n / chunks, wg: wg}
	}
	r.runRange(0, 0, n/chunks)
	wg.Wait()
}
