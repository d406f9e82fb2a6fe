package deploy

import "time"

// SetURLWait sets how long deploy waits for a new app's URL, and returns
// a function that sets it back.
func SetURLWait(d time.Duration) func() {
	old := urlWait
	urlWait = d
	return func() { urlWait = old }
}
