//go:build !linux

package agent

import "errors"

func hostMemoryMiB() (int64, error) {
	return 0, errors.New("memory detection is implemented for Linux only")
}

func diskGiB(string) (int64, error) {
	return 0, errors.New("disk detection is implemented for Linux only")
}
