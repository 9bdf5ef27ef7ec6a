//go:build !unix

package dockertest

// lockFile is a no-op where flock does not exist: concurrent builds of the
// same image are still correct there, only wasteful.
func lockFile(string) (unlock func(), err error) { return func() {}, nil }
