//go:build !linux

package execrelay

import (
	"os"
	"syscall"
)

// pending reports whether the pipe f has unread bytes; elsewhere than
// Linux it cannot tell, and says no.
func pending(*os.File) bool { return false }

// childAttr is nothing special elsewhere than Linux.
func childAttr() *syscall.SysProcAttr { return nil }
