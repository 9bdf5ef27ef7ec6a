package docker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// readInRoot reads the regular file at inside (an absolute path in the
// container) under root (the container's root directory as the host sees
// it, /proc/<pid>/root), treating the container as hostile: the path is
// resolved as if root were "/" (RESOLVE_IN_ROOT: no ".." or absolute
// symlink leaves it), no symlink is followed at all (RESOLVE_NO_SYMLINKS:
// the file is where the init writes it or nowhere), no /proc magic link
// either; the open does not block (O_NONBLOCK: a FIFO put there answers at
// once, and is then refused as not a regular file), and at most max bytes
// are read (a bigger file is refused).
func readInRoot(root, inside string, max int64) ([]byte, error) {
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open the container's root: %w", err)
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, strings.TrimLeft(inside, "/"), &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s in the container: %w", inside, err)
	}
	f := os.NewFile(uintptr(fd), inside)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s in the container is not a regular file", inside)
	}
	if st.Size > max {
		return nil, fmt.Errorf("%s in the container holds %d bytes, over %d", inside, st.Size, max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max { // grew since the stat
		return nil, errors.New(inside + " in the container grew over its bound while read")
	}
	return b, nil
}
