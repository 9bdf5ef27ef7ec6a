package delta

import (
	"errors"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// tree reaches the files under one root through directory descriptors that
// are opened one component at a time with O_NOFOLLOW, so no path can lead
// outside the root, whatever symlinks appear in it. A tree is used by one
// goroutine at a time.
type tree struct {
	root  int
	dirs  map[string]int // open directory descriptors by relative path
	xattr []byte         // scratch for xattr calls
}

const dirCacheSize = 128

func openTree(root string) (*tree, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	return &tree{root: fd, dirs: map[string]int{}}, nil
}

func (t *tree) close() {
	t.forget(".")
	unix.Close(t.root)
}

// dir returns a descriptor of the directory rel ("." is the root). The
// descriptor belongs to the tree and stays valid until the next call.
func (t *tree) dir(rel string) (int, error) {
	if rel == "." {
		return t.root, nil
	}
	if fd, ok := t.dirs[rel]; ok {
		return fd, nil
	}
	parent, base := split(rel)
	pfd, err := t.dir(parent)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP || err == unix.ENOTDIR {
			return -1, &os.PathError{Op: "open", Path: rel, Err: errors.New("not a directory (symlinks are never followed)")}
		}
		return -1, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	if len(t.dirs) >= dirCacheSize {
		for k, v := range t.dirs {
			unix.Close(v)
			delete(t.dirs, k)
		}
	}
	t.dirs[rel] = fd
	return fd, nil
}

// at returns the directory descriptor and the final name of rel.
func (t *tree) at(rel string) (int, string, error) {
	parent, base := split(rel)
	fd, err := t.dir(parent)
	return fd, base, err
}

// forget closes the cached descriptors of rel and everything under it, after
// rel was removed or replaced.
func (t *tree) forget(rel string) {
	for k, v := range t.dirs {
		if rel == "." || k == rel || strings.HasPrefix(k, rel+"/") {
			unix.Close(v)
			delete(t.dirs, k)
		}
	}
}

func split(rel string) (string, string) {
	d, b := path.Split(rel)
	if d == "" {
		return ".", b
	}
	return d[:len(d)-1], b
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

func (t *tree) lstat(rel string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if rel == "." {
		err := unix.Fstat(t.root, &st)
		return st, pathErr("stat", rel, err)
	}
	fd, base, err := t.at(rel)
	if err != nil {
		return st, err
	}
	return st, pathErr("lstat", rel, unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW))
}

// open opens a file that is not a symlink.
func (t *tree) open(rel string, flags int, perm uint32) (*os.File, error) {
	fd, base, err := t.at(rel)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		base = "."
	}
	nfd, err := unix.Openat(fd, base, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return nil, pathErr("open", rel, err)
	}
	return os.NewFile(uintptr(nfd), rel), nil
}

// names lists a directory.
func (t *tree) names(rel string) ([]string, error) {
	fd, err := t.dir(rel)
	if err != nil {
		return nil, err
	}
	nfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, pathErr("open", rel, err)
	}
	f := os.NewFile(uintptr(nfd), rel)
	defer f.Close()
	return f.Readdirnames(-1)
}

func (t *tree) readlink(rel string) (string, error) {
	fd, base, err := t.at(rel)
	if err != nil {
		return "", err
	}
	buf := make([]byte, 4096)
	for {
		n, err := unix.Readlinkat(fd, base, buf)
		if err != nil {
			return "", pathErr("readlink", rel, err)
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		if len(buf) >= 1<<16 {
			return "", pathErr("readlink", rel, unix.ENAMETOOLONG)
		}
		buf = make([]byte, 2*len(buf))
	}
}

// xpath names rel for the path-based xattr calls without following any
// symlink: the directory through /proc/self/fd, the final name with the l*
// calls. The root goes through its descriptor instead.
func (t *tree) xpath(rel string) (string, error) {
	fd, base, err := t.at(rel)
	if err != nil {
		return "", err
	}
	return "/proc/self/fd/" + strconv.Itoa(fd) + "/" + base, nil
}

// copiedXattr says which xattrs travel: user.*, trusted.* (overlayfs),
// file capabilities and POSIX ACLs. security.selinux and the like are the
// destination host's business.
func copiedXattr(name string) bool {
	return strings.HasPrefix(name, "user.") || strings.HasPrefix(name, "trusted.") ||
		name == "security.capability" || name == "system.posix_acl_access" ||
		name == "system.posix_acl_default"
}

func (t *tree) scratch() []byte {
	if t.xattr == nil {
		t.xattr = make([]byte, 64<<10)
	}
	return t.xattr
}

// xattrs reads the copied xattrs of rel, sorted by name. A filesystem
// without xattr support has none.
func (t *tree) xattrs(rel string) ([]xattr, error) {
	buf := t.scratch()
	var n int
	var p string
	var err error
	if rel == "." {
		n, err = unix.Flistxattr(t.root, buf)
	} else {
		if p, err = t.xpath(rel); err != nil {
			return nil, err
		}
		n, err = unix.Llistxattr(p, buf)
	}
	if err != nil {
		if err == unix.ENOTSUP {
			return nil, nil
		}
		return nil, pathErr("listxattr", rel, err)
	}
	var names []string
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if name != "" && copiedXattr(name) {
			names = append(names, name)
		}
	}
	var out []xattr
	for _, name := range names {
		var m int
		if rel == "." {
			m, err = unix.Fgetxattr(t.root, name, buf)
		} else {
			m, err = unix.Lgetxattr(p, name, buf)
		}
		if err == unix.ENODATA {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, pathErr("getxattr "+name, rel, err)
		}
		out = append(out, xattr{Name: name, Value: append([]byte(nil), buf[:m]...)})
	}
	sortXattrs(out)
	return out, nil
}

func sortXattrs(x []xattr) {
	for i := 1; i < len(x); i++ {
		for j := i; j > 0 && x[j].Name < x[j-1].Name; j-- {
			x[j], x[j-1] = x[j-1], x[j]
		}
	}
}

func (t *tree) setxattr(rel, name string, val []byte) error {
	if rel == "." {
		return pathErr("setxattr "+name, rel, unix.Fsetxattr(t.root, name, val, 0))
	}
	p, err := t.xpath(rel)
	if err != nil {
		return err
	}
	return pathErr("setxattr "+name, rel, unix.Lsetxattr(p, name, val, 0))
}

func (t *tree) removexattr(rel, name string) error {
	if rel == "." {
		return pathErr("removexattr "+name, rel, unix.Fremovexattr(t.root, name))
	}
	p, err := t.xpath(rel)
	if err != nil {
		return err
	}
	return pathErr("removexattr "+name, rel, unix.Lremovexattr(p, name))
}

// removeAll removes rel and, for a directory, everything under it, without
// following symlinks.
func (t *tree) removeAll(rel string) error {
	if rel == "." {
		return pathErr("remove", rel, unix.EINVAL)
	}
	st, err := t.lstat(rel)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		names, err := t.names(rel)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := t.removeAll(join(rel, n)); err != nil {
				return err
			}
		}
		t.forget(rel)
		fd, base, err := t.at(rel)
		if err != nil {
			return err
		}
		return pathErr("rmdir", rel, unix.Unlinkat(fd, base, unix.AT_REMOVEDIR))
	}
	fd, base, err := t.at(rel)
	if err != nil {
		return err
	}
	err = unix.Unlinkat(fd, base, 0)
	if err == unix.ENOENT {
		return nil
	}
	return pathErr("unlink", rel, err)
}

func pathErr(op, rel string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: rel, Err: err}
}

// kindOf maps a stat mode to an entry kind, 0 for none.
func kindOf(mode uint32) Kind {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return KindDir
	case unix.S_IFREG:
		return KindRegular
	case unix.S_IFLNK:
		return KindSymlink
	case unix.S_IFIFO:
		return KindFIFO
	case unix.S_IFSOCK:
		return KindSocket
	case unix.S_IFCHR:
		return KindCharDev
	case unix.S_IFBLK:
		return KindBlockDev
	}
	return 0
}

func modeBits(k Kind) uint32 {
	switch k {
	case KindFIFO:
		return unix.S_IFIFO
	case KindSocket:
		return unix.S_IFSOCK
	case KindCharDev:
		return unix.S_IFCHR
	case KindBlockDev:
		return unix.S_IFBLK
	}
	return 0
}

func mtimeOf(st *unix.Stat_t) int64 { return st.Mtim.Sec*1e9 + st.Mtim.Nsec }
func ctimeOf(st *unix.Stat_t) int64 { return st.Ctim.Sec*1e9 + st.Ctim.Nsec }
