package testenv

// ForEach calls do(i) for every i in [0, n) from workers goroutines at
// once, as that many clients would, and returns the first error.
func ForEach(workers, n int, do func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, 1)
	done := make(chan struct{})
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range next {
				if err := do(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	for range workers {
		<-done
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
