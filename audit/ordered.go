package audit

import "sync"

// ordered runs jobs 0..n-1 on workers goroutines (each with the work
// function newWorker returns, called on the caller's goroutine) and hands
// their results to each in job order, at most depth jobs ahead of it. It
// stops handing out jobs at each's first error, which it returns once the
// started jobs have finished.
func ordered[R any](n, workers, depth int, newWorker func() func(i int, r *R), each func(r *R) error) error {
	type job struct {
		i  int
		r  R
		ok chan struct{}
	}
	todo := make(chan *job, workers)
	order := make(chan *job, depth)
	var wg sync.WaitGroup
	for range workers {
		work := newWorker()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range todo {
				work(j.i, &j.r)
				close(j.ok)
			}
		}()
	}
	stop := make(chan struct{})
	go func() {
		defer close(todo)
		defer close(order)
		for i := range n {
			j := &job{i: i, ok: make(chan struct{})}
			select {
			case order <- j:
			case <-stop:
				return
			}
			todo <- j
		}
	}()
	var first error
	for j := range order {
		<-j.ok
		if first == nil {
			if first = each(&j.r); first != nil {
				close(stop)
			}
		}
	}
	wg.Wait()
	return first
}
